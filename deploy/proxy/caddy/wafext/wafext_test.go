package wafext

import (
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/collection"
	"github.com/corazawaf/coraza/v3/debuglog"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
	"github.com/corazawaf/coraza/v3/types/variables"
)

// The package's init has registered the production operators (rx on RE2, pm) and the
// body processors in this test binary, as in the proxy.

func newWAF(t *testing.T, directives ...string) coraza.WAF {
	t.Helper()
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(strings.Join(directives, "\n")))
	if err != nil {
		t.Fatalf("WAF: %v", err)
	}
	return waf
}

type request struct {
	contentType, body, query string
}

// run sends one POST through the WAF and returns the interruption (nil: passed) and ARGS_POST.
func run(t *testing.T, waf coraza.WAF, r request) (*types.Interruption, map[string]string) {
	t.Helper()
	tx := waf.NewTransaction()
	defer tx.Close()
	tx.ProcessConnection("127.0.0.1", 1234, "127.0.0.1", 80)
	tx.ProcessURI("/p"+r.query, "POST", "HTTP/1.1")
	tx.AddRequestHeader("Host", "example.test")
	tx.AddRequestHeader("Content-Type", r.contentType)
	if it := tx.ProcessRequestHeaders(); it != nil {
		return it, nil
	}
	if it, _, err := tx.WriteRequestBody([]byte(r.body)); err != nil || it != nil {
		return it, nil
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	args := map[string]string{}
	vars := tx.(interface {
		Variables() plugintypes.TransactionVariables
	}).Variables()
	for _, m := range vars.ArgsPost().FindAll() {
		args[m.Key()] = m.Value()
	}
	return it, args
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const (
	jsonProcessor_ = `SecRule REQUEST_HEADERS:Content-Type "^application/json" "id:1,phase:1,pass,nolog,ctl:requestBodyProcessor=JSON"`
	formProcessor  = `SecRule REQUEST_HEADERS:Content-Type "^application/x-www-form-urlencoded" "id:2,phase:1,pass,nolog,ctl:requestBodyProcessor=URLENCODED"`
	refuseRule     = `SecRule TX:edge_body_over_limit "!@streq %{tx.nothing}" "id:3,phase:2,deny,status:413,msg:'over %{tx.edge_body_over_limit}'"`
)

func limits(args, depth, action string) string {
	return `SecAction "id:4,phase:1,pass,nolog,setvar:tx.edge_body_max_args=` + args + `,setvar:tx.edge_json_max_depth=` + depth + `,setvar:tx.edge_body_limit_action=` + action + `"`
}

func TestJSONWithoutLimitsIsCorazasShape(t *testing.T) {
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", jsonProcessor_)
	_, args := run(t, waf, request{contentType: "application/json", body: `{"a":{"b":1,"c":[true,null,"x"]},"d":"e"}`})
	want := map[string]string{"json.a.b": "1", "json.a.c.0": "true", "json.a.c.1": "", "json.a.c.2": "x", "json.a.c": "3", "json.d": "e"}
	if len(args) != len(want) {
		t.Fatalf("args %v, want %v", args, want)
	}
	for k, v := range want {
		if args[k] != v {
			t.Fatalf("%s = %q, want %q (all: %v)", k, args[k], v, args)
		}
	}
}

func TestJSONPartialKeepsTheFirstValuesAndShallowLevels(t *testing.T) {
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", jsonProcessor_, limits("3", "2", "partial"),
		`SecRule TX:edge_body_over_limit "@streq depth" "id:6,phase:2,deny,status:299"`)
	it, args := run(t, waf, request{contentType: "application/json", body: `{"a":1,"b":{"c":2,"d":{"e":3}},"f":4,"g":5}`})
	// The first limit passed is named for the rules: the depth (json.b.d.e), before the count.
	if it == nil || it.Status != 299 {
		t.Fatalf("partial must mark the body as over the depth limit: %v", it)
	}
	// json.b.d.e is at depth 3 (> 2): skipped; then a, b.c, f fill the 3 places; g is past the count.
	if got := strings.Join(keys(args), " "); got != "json.a json.b.c json.f" {
		t.Fatalf("inspected %q", got)
	}
}

func TestJSONPassCollectsNothingPastALimit(t *testing.T) {
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", jsonProcessor_, limits("2", "0", "pass"))
	it, args := run(t, waf, request{contentType: "application/json", body: `{"a":1,"b":2,"c":3}`})
	if it != nil || len(args) != 0 {
		t.Fatalf("pass: interruption %v, args %v", it, args)
	}
	_, args = run(t, waf, request{contentType: "application/json", body: `{"a":1,"b":2}`})
	if len(args) != 2 {
		t.Fatalf("within the limit every value is inspected: %v", args)
	}
}

func TestJSONRefuseNamesTheLimit(t *testing.T) {
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", jsonProcessor_, limits("0", "2", "refuse"), refuseRule)
	it, _ := run(t, waf, request{contentType: "application/json", body: `{"a":{"b":{"c":1}}}`})
	if it == nil || it.Status != 413 {
		t.Fatalf("refuse: want 413, got %v", it)
	}
	if it, _ := run(t, waf, request{contentType: "application/json", body: `{"a":{"b":1}}`}); it != nil {
		t.Fatalf("depth 2 is within the limit: %v", it)
	}
}

func TestURLEncodedLimitsAndRawBody(t *testing.T) {
	raw := `SecRule REQUEST_BODY "@contains z=9" "id:5,phase:2,deny,status:418"`
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", formProcessor, limits("2", "0", "partial"), raw)
	it, args := run(t, waf, request{contentType: "application/x-www-form-urlencoded", body: "a=1&b=%41+B&c=3"})
	if it != nil {
		t.Fatalf("unexpected interruption %v", it)
	}
	if args["a"] != "1" || args["b"] != "A B" || len(args) != 2 {
		t.Fatalf("first two values, decoded: %v", args)
	}
	if it, _ := run(t, waf, request{contentType: "application/x-www-form-urlencoded", body: "z=9"}); it == nil || it.Status != 418 {
		t.Fatalf("REQUEST_BODY must hold the raw body: %v", it)
	}
}

func TestRXCapturesOnlyOnAMatch(t *testing.T) {
	waf := newWAF(t, "SecRuleEngine On", "SecRequestBodyAccess On", formProcessor,
		`SecRule ARGS "@rx ^a(b+)c$" "id:10,phase:2,capture,pass,nolog,setvar:tx.seen=%{TX.1}"`,
		`SecRule TX:seen "@streq bbb" "id:11,phase:2,deny,status:403"`)
	if it, _ := run(t, waf, request{contentType: "application/x-www-form-urlencoded", body: "x=abbbc"}); it == nil || it.Status != 403 {
		t.Fatalf("capture group 1 must be bbb: %v", it)
	}
	if it, _ := run(t, waf, request{contentType: "application/x-www-form-urlencoded", body: "x=abxc"}); it != nil {
		t.Fatalf("no match, no interruption: %v", it)
	}
}

// state is the part of a transaction an operator sees.
type state struct {
	capturing bool
	captures  [10]string
}

func (s *state) ID() string                                              { return "t" }
func (s *state) Variables() plugintypes.TransactionVariables             { return nil }
func (s *state) Collection(variables.RuleVariable) collection.Collection { return nil }
func (s *state) DebugLogger() debuglog.Logger                            { return debuglog.Noop() }
func (s *state) Capturing() bool                                         { return s.capturing }
func (s *state) CaptureField(i int, v string)                            { s.captures[i] = v }
func (s *state) LastPhase() types.RulePhase                              { return types.PhaseRequestBody }
func (s *state) Interrupt(*types.Interruption)                           {}

// Every @rx pattern of the embedded CRS compiles on RE2 and decides like Go's regexp (the
// engine Coraza uses without this package) on a corpus of attacks and ordinary values.
func TestCRSPatternsMatchLikeGoRegexp(t *testing.T) {
	corpus := []string{
		"", "hello world", "42", "john.doe@example.com", "/api/v1/orders?id=7", "Mozilla/5.0 (X11; Linux x86_64)",
		"1' OR '1'='1", "1 union select password from users--", "admin'--", "' or sleep(5)#",
		"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "javascript:alert(document.cookie)",
		"../../../../etc/passwd", "..%2f..%2fetc%2fshadow", "/bin/bash -c 'id'", "; cat /etc/passwd",
		"${jndi:ldap://x.test/a}", "() { :; }; echo vulnerable", "<?php system($_GET['c']); ?>",
		"class.module.classLoader.resources", "php://filter/convert.base64-encode/resource=index.php",
		"SELECT * FROM t WHERE a=1", "multi\nline\nvalue", "ünïcödé välüé", "\x00\x01binary\xff",
	}
	rxArg := regexp.MustCompile(`"@rx ((?:[^"\\]|\\.)*)"`)
	checked := 0
	err := fs.WalkDir(coreruleset.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".conf") {
			return err
		}
		text, err := fs.ReadFile(coreruleset.FS, path)
		if err != nil {
			return err
		}
		for _, m := range rxArg.FindAllStringSubmatch(string(text), -1) {
			pattern := "(?sm)" + strings.ReplaceAll(m[1], `\"`, `"`)
			if matchesArbitraryBytes(pattern) {
				continue // Coraza's own binary matcher, unchanged
			}
			goRE, err := regexp.Compile(pattern)
			if err != nil {
				t.Errorf("%s: Go regexp refuses %q: %v", path, pattern, err)
				continue
			}
			op, err := newRE2RX(plugintypes.OperatorOptions{Arguments: strings.ReplaceAll(m[1], `\"`, `"`)})
			if err != nil {
				t.Errorf("%s: refused %q: %v", path, pattern, err)
				continue
			}
			for _, in := range corpus {
				for _, capturing := range []bool{false, true} {
					st := &state{capturing: capturing}
					if got := op.Evaluate(st, in); got != goRE.MatchString(in) {
						t.Errorf("%s: %q on %q (capturing %v): Go %v, operator %v", path, pattern, in, capturing, !got, got)
					} else if got && capturing && st.captures[0] != goRE.FindStringSubmatch(in)[0] {
						t.Errorf("%s: %q on %q: captured %q, Go %q", path, pattern, in, st.captures[0], goRE.FindStringSubmatch(in)[0])
					}
				}
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 200 {
		t.Fatalf("only %d CRS patterns found: the extraction is broken", checked)
	}
}
