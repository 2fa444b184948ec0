package wafext

import (
	"io"
	"strconv"
	"strings"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/tidwall/gjson"
)

// Request body limits per host. Coraza v3.3.3 applies SecArgumentsLimit to the query
// string only (its JSON and urlencoded processors fill ARGS_POST directly) and has no
// JSON depth limit, so the JSON and urlencoded processors are replaced by copies of
// Coraza's (same argument names and values) that read the host's limits from TX
// variables, which the panel's rules set in phase 1:
//
//	tx.edge_body_max_args      more values than this is over the limit (0 or unset: none)
//	tx.edge_json_max_depth     a value nested deeper than this is over the limit (0 or unset: none)
//	tx.edge_body_limit_action  what happens past a limit:
//	    partial  the first values (document order) up to the count, and the levels up to
//	             the depth, are collected and inspected; the rest is not
//	    pass     nothing of the body is collected: it is not inspected
//	    refuse   nothing is collected; a panel rule refuses the request (status 413)
//
// Past a limit, tx.edge_body_over_limit names it ("arguments" or "depth"). Without the
// variables (a WAF the panel did not configure) they behave exactly as Coraza's.
const (
	txMaxArgs     = "edge_body_max_args"
	txMaxDepth    = "edge_json_max_depth"
	txLimitAction = "edge_body_limit_action"
	txOverLimit   = "edge_body_over_limit"
)

type bodyLimits struct {
	maxArgs  int
	maxDepth int
	partial  bool
}

func limitsOf(v plugintypes.TransactionVariables) bodyLimits {
	tx := v.TX()
	num := func(key string) int {
		if vs := tx.Get(key); len(vs) > 0 {
			if n, err := strconv.Atoi(vs[0]); err == nil && n > 0 {
				return n
			}
		}
		return 0
	}
	action := ""
	if vs := tx.Get(txLimitAction); len(vs) > 0 {
		action = vs[0]
	}
	return bodyLimits{maxArgs: num(txMaxArgs), maxDepth: num(txMaxDepth), partial: action == "" || action == "partial"}
}

// collector gathers a body's arguments in document order and notes the first limit passed.
type collector struct {
	limits bodyLimits
	keys   []string
	values []string
	over   string
}

func (c *collector) add(key, value string, depth int) {
	if c.limits.maxDepth > 0 && depth > c.limits.maxDepth {
		c.overLimit("depth")
		return
	}
	if c.limits.maxArgs > 0 && len(c.keys) >= c.limits.maxArgs {
		c.overLimit("arguments")
		return
	}
	c.keys = append(c.keys, key)
	c.values = append(c.values, value)
}

func (c *collector) overLimit(which string) {
	if c.over == "" {
		c.over = which
	}
}

// commit writes what may be inspected into ARGS_POST (SetIndex keeps repeated keys apart,
// as Coraza's JSON processor does with its map; Add is what its urlencoded one does).
func (c *collector) commit(v plugintypes.TransactionVariables, add func(key, value string)) {
	if c.over != "" {
		v.TX().Set(txOverLimit, []string{c.over})
		if !c.limits.partial {
			return
		}
	}
	for i, k := range c.keys {
		add(k, c.values[i])
	}
}

type jsonProcessor struct{}

func (jsonProcessor) ProcessRequest(reader io.Reader, v plugintypes.TransactionVariables, _ plugintypes.BodyProcessorOptions) error {
	s := strings.Builder{}
	if _, err := io.Copy(&s, reader); err != nil {
		return err
	}
	c := &collector{limits: limitsOf(v)}
	readJSONItems(gjson.Parse(s.String()), []byte("json"), 1, c)
	col := v.ArgsPost()
	c.commit(v, func(k, val string) { col.SetIndex(k, 0, val) })
	return nil
}

func (jsonProcessor) ProcessResponse(reader io.Reader, v plugintypes.TransactionVariables, _ plugintypes.BodyProcessorOptions) error {
	s := strings.Builder{}
	if _, err := io.Copy(&s, reader); err != nil {
		return err
	}
	c := &collector{} // no limits on responses, as Coraza
	readJSONItems(gjson.Parse(s.String()), []byte("json"), 1, c)
	col := v.ResponseArgs()
	for i, k := range c.keys {
		col.SetIndex(k, 0, c.values[i])
	}
	return nil
}

// readJSONItems is Coraza v3.3.3's readItems (internal/bodyprocessors/json.go, Apache-2.0)
// with the depth passed down: {"a":{"b":1}} gives json.a.b = "1" at depth 2; an array
// also gives its length under its own name, at its own depth.
func readJSONItems(json gjson.Result, objKey []byte, depth int, c *collector) {
	arrayLen := 0
	json.ForEach(func(key, value gjson.Result) bool {
		prevParentLength := len(objKey)
		objKey = append(objKey, '.')
		if key.Type == gjson.String {
			objKey = append(objKey, key.Str...)
		} else {
			objKey = strconv.AppendInt(objKey, int64(key.Num), 10)
			arrayLen++
		}
		var val string
		switch value.Type {
		case gjson.JSON:
			readJSONItems(value, objKey, depth+1, c)
			objKey = objKey[:prevParentLength]
			return true
		case gjson.String:
			val = value.Str
		case gjson.Null:
			val = ""
		default:
			val = value.Raw
		}
		c.add(string(objKey), val, depth)
		objKey = objKey[:prevParentLength]
		return true
	})
	if arrayLen > 0 {
		c.add(string(objKey), strconv.Itoa(arrayLen), depth-1)
	}
}

type urlencodedProcessor struct{}

// settable is the setter of Coraza's internal single-value collections (REQUEST_BODY).
type settable interface{ Set(string) }

func (urlencodedProcessor) ProcessRequest(reader io.Reader, v plugintypes.TransactionVariables, _ plugintypes.BodyProcessorOptions) error {
	buf := new(strings.Builder)
	if _, err := io.Copy(buf, reader); err != nil {
		return err
	}
	b := buf.String()
	c := &collector{limits: limitsOf(v)}
	parseQuery(b, '&', c)
	col := v.ArgsPost()
	c.commit(v, col.Add)
	// The raw body stays visible to rules that read REQUEST_BODY, as with Coraza's processor.
	if s, ok := v.RequestBody().(settable); ok {
		s.Set(b)
	}
	if s, ok := v.RequestBodyLength().(settable); ok {
		s.Set(strconv.Itoa(len(b)))
	}
	return nil
}

func (urlencodedProcessor) ProcessResponse(io.Reader, plugintypes.TransactionVariables, plugintypes.BodyProcessorOptions) error {
	return nil
}

// parseQuery is Coraza v3.3.3's internal/url doParseQuery (Apache-2.0), in document order.
func parseQuery(query string, separator byte, c *collector) {
	for query != "" {
		key := query
		if i := strings.IndexByte(key, separator); i >= 0 {
			key, query = key[:i], key[i+1:]
		} else {
			query = ""
		}
		if key == "" {
			continue
		}
		value := ""
		if i := strings.IndexByte(key, '='); i >= 0 {
			key, value = key[:i], key[i+1:]
		}
		c.add(queryUnescape(key), queryUnescape(value), 1)
	}
}

// queryUnescape is a non-strict version of net/url.QueryUnescape (Coraza's).
func queryUnescape(input string) string {
	ilen := len(input)
	res := strings.Builder{}
	res.Grow(ilen)
	for i := 0; i < ilen; i++ {
		ci := input[i]
		if ci == '+' {
			res.WriteByte(' ')
			continue
		}
		if ci == '%' {
			if i+2 >= ilen {
				res.WriteByte(ci)
				continue
			}
			hi, ok := hexDigitToByte(input[i+1])
			if !ok {
				res.WriteByte(ci)
				continue
			}
			lo, ok := hexDigitToByte(input[i+2])
			if !ok {
				res.WriteByte(ci)
				continue
			}
			res.WriteByte(hi<<4 | lo)
			i += 2
			continue
		}
		res.WriteByte(ci)
	}
	return res.String()
}

func hexDigitToByte(digit byte) (byte, bool) {
	switch {
	case digit >= '0' && digit <= '9':
		return digit - '0', true
	case digit >= 'a' && digit <= 'f':
		return digit - 'a' + 10, true
	case digit >= 'A' && digit <= 'F':
		return digit - 'A' + 10, true
	default:
		return 0, false
	}
}

func registerBodyProcessors() {
	plugins.RegisterBodyProcessor("json", func() plugintypes.BodyProcessor { return jsonProcessor{} })
	plugins.RegisterBodyProcessor("urlencoded", func() plugintypes.BodyProcessor { return urlencodedProcessor{} })
}
