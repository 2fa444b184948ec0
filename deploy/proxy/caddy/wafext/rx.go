package wafext

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/wasilibs/go-re2"
	"rsc.io/binaryregexp"
)

// The @rx operator on RE2 (C++, through cgo), deciding as Coraza v3.3.3's own rx (RE2
// syntax, "(?sm)" prepended, at most 9 captures), with three differences for cost only:
//   - a plain match first: clean input almost never matches, and a plain match is one
//     cgo call on RE2's DFA, where a capturing search is three (allocate, match, free)
//     and runs RE2's slower submatch engines. Most CRS rules capture.
//   - one compiled regexp per pattern for the whole process: every host with the WAF
//     is its own Coraza instance (coraza-caddy v2.1.0 shares none), and RE2's DFA
//     caches live beside each compiled regexp.
//   - input that is not valid UTF-8 goes to Go's regexp, as in Coraza: RE2 in UTF-8
//     mode does not let "." match an invalid byte where Go's regexp sees U+FFFD
//     (CRS 920450's "^.*$" on such a header name).
type re2RX struct {
	c *compiledRX
}

type compiledRX struct {
	re     *re2.Regexp
	goOnce sync.Once
	goRE   *regexp.Regexp
	source string
}

func (c *compiledRX) goRegexp() *regexp.Regexp {
	c.goOnce.Do(func() { c.goRE = regexp.MustCompile(c.source) }) // RE2 accepted it; Go's regexp has the same syntax
	return c.goRE
}

var _ plugintypes.Operator = (*re2RX)(nil)

var (
	rxCacheMu sync.Mutex
	rxCache   = map[string]*compiledRX{}
)

// Patterns come from rule text (the CRS and the panel's own rules), a bounded set:
// the cache needs no eviction.
func compileRE2(pattern string) (*compiledRX, error) {
	rxCacheMu.Lock()
	defer rxCacheMu.Unlock()
	if c, ok := rxCache[pattern]; ok {
		return c, nil
	}
	re, err := re2.Compile(pattern)
	if err != nil {
		return nil, err
	}
	c := &compiledRX{re: re, source: pattern}
	rxCache[pattern] = c
	return c, nil
}

func newRE2RX(options plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	data := fmt.Sprintf("(?sm)%s", options.Arguments)
	if matchesArbitraryBytes(data) {
		// Byte escapes that are not UTF-8 (\xff): Coraza's binary matcher, unchanged (rare).
		re, err := binaryregexp.Compile(options.Arguments)
		if err != nil {
			return nil, err
		}
		return &binaryRX{re: re}, nil
	}
	c, err := compileRE2(data)
	if err != nil {
		return nil, err
	}
	return &re2RX{c: c}, nil
}

func (o *re2RX) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !utf8.ValidString(value) {
		return evaluateCapturing(tx, o.c.goRegexp().FindStringSubmatch, o.c.goRegexp().MatchString, value)
	}
	if !o.c.re.MatchString(value) {
		return false
	}
	if tx.Capturing() {
		captureAll(tx, o.c.re.FindStringSubmatch(value))
	}
	return true
}

// binaryRX is Coraza's matcher for patterns of arbitrary bytes.
type binaryRX struct {
	re *binaryregexp.Regexp
}

func (o *binaryRX) Evaluate(tx plugintypes.TransactionState, value string) bool {
	return evaluateCapturing(tx, o.re.FindStringSubmatch, o.re.MatchString, value)
}

// evaluateCapturing is Coraza's rx evaluation: the submatch search when the rule captures.
func evaluateCapturing(tx plugintypes.TransactionState, find func(string) []string, match func(string) bool, value string) bool {
	if !tx.Capturing() {
		return match(value)
	}
	m := find(value)
	if len(m) == 0 {
		return false
	}
	captureAll(tx, m)
	return true
}

func captureAll(tx plugintypes.TransactionState, match []string) {
	for i, c := range match {
		if i == 9 {
			return
		}
		tx.CaptureField(i, c)
	}
}

// matchesArbitraryBytes tells whether the pattern's \xNN escapes spell bytes that are not
// valid UTF-8 (the same test as Coraza's and coraza-wasilibs' rx).
func matchesArbitraryBytes(expr string) bool {
	decoded := make([]byte, 0, len(expr))
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\\' {
			decoded = append(decoded, c)
			continue
		}
		if i+3 >= len(expr) {
			decoded = append(decoded, expr[i:]...)
			break
		}
		if expr[i+1] != 'x' {
			decoded = append(decoded, expr[i])
			continue
		}
		v, mb, _, err := strconv.UnquoteChar(expr[i:], 0)
		if err != nil || mb {
			decoded = append(decoded, expr[i])
			continue
		}
		decoded = append(decoded, byte(v))
		i += 3
	}
	return !utf8.Valid(decoded)
}
