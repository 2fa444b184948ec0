package wafext

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/corazawaf/libinjection-go"
)

// Fragments that steer libinjection's HTML parses into every state they have: quotes,
// tag ends, self-closing slashes, comment and doctype openers, IE conditionals, the
// attribute names it treats as dangerous, URLs, NULs and white space. '<' and '=' are
// added separately, so that values without them can be generated on purpose.
var xssFragments = []string{
	`"`, `'`, "`", `/`, `>`, ` `, "\t", "\n", "\v", "\f", "\r", "\x00", `!`, `-`, `--`, `-->`, `?`, `%`, `%>`,
	`[if`, `[IF IE]`, `xml`, `import`, `IMPORT`, `entity`, `ENTITY`, `doctype`, `DOCTYPE`, `[CDATA[`, `]]>`,
	`onerror`, `onload`, `ONMOUSEOVER`, `style`, `href`, `src`, `formaction`, `xlink:href`, `attributename`, `values`,
	`javascript:`, `JaVaScRiPt:`, `vbscript:`, `data:`, `view-source:`, `script`, `svg`, `img`, `iframe`, `a`,
	`alert(1)`, `&#x3c;`, `&lt;`, `\u003c`, `x`, `1`, `item-7`, `json.items.0.name`, "\xc0\xbc", "\xff",
}

func randomValue(r *rand.Rand, extra []string) string {
	var b strings.Builder
	for n := r.Intn(12) + 1; n > 0; n-- {
		if len(extra) > 0 && r.Intn(4) == 0 {
			b.WriteString(extra[r.Intn(len(extra))])
		} else {
			b.WriteString(xssFragments[r.Intn(len(xssFragments))])
		}
	}
	return b.String()
}

// The pre-check of @detectXSS (injection.go) never hides what libinjection would flag:
// values without '<' and '=' are never XSS to libinjection, and the operator answers as
// libinjection on every value.
func TestXSSPrecheckAgreesWithLibinjection(t *testing.T) {
	attacks := []string{
		`<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, `"><svg/onload=alert(1)>`,
		`" onmouseover="alert(1)`, `' onfocus='alert(1)' autofocus x='`, "` onclick=alert(1) x=`",
		`x onerror=alert(1)`, `style=x:expression(alert(1))`, `href=javascript:alert(1)`,
		`<!DOCTYPE html>`, `<!--[if IE]>x<![endif]-->`, `<?import namespace="x">`, `<a href="javascript:alert(1)">`,
		`<iframe src=data:text/html,x>`, `<x formaction=javascript:alert(1)>`,
	}
	op := detectXSS{}
	for _, a := range attacks {
		if !libinjection.IsXSS(a) {
			t.Errorf("libinjection no longer flags %q: the corpus needs a look", a)
		}
		if !op.Evaluate(nil, a) {
			t.Errorf("@detectXSS misses %q", a)
		}
	}
	r := rand.New(rand.NewSource(25))
	withMarkup := []string{`<`, `=`, `<!`, `</`, `<?`, `<%`}
	for i := 0; i < 300_000; i++ {
		v := randomValue(r, nil)
		if strings.ContainsAny(v, "<=") {
			t.Fatalf("generator: %q", v)
		}
		if libinjection.IsXSS(v) {
			t.Fatalf("libinjection flags %q, which holds neither '<' nor '=': the pre-check would hide it", v)
		}
		w := randomValue(r, withMarkup)
		if got, want := op.Evaluate(nil, w), libinjection.IsXSS(w); got != want {
			t.Fatalf("@detectXSS(%q) = %v, libinjection %v", w, got, want)
		}
	}
}

// go test -fuzz FuzzXSSPrecheck ./wafext/ searches further; the seeds run with the tests.
func FuzzXSSPrecheck(f *testing.F) {
	for _, s := range append([]string{"", "item-7", `" onmouseover=x`, `<b>`}, xssFragments...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !xssNeedsLibinjection(v) && libinjection.IsXSS(v) {
			t.Fatalf("libinjection flags %q, which the pre-check skips", v)
		}
	})
}

// The words of libinjection's keyword table made of letters, digits and '_', read from the
// module's own source (the table is unexported): every keyword type a word token can take.
func libinjectionWords(t *testing.T) []string {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/corazawaf/libinjection-go").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	text, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "sqli_data.go"))
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, m := range regexp.MustCompile(`(?m)^\t"([A-Za-z0-9_]+)":\s+'([^F])',`).FindAllStringSubmatch(string(text), -1) {
		words = append(words, m[1], strings.ToLower(m[1]))
	}
	if len(words) < 1000 {
		t.Fatalf("only %d keywords read from libinjection's table: the extraction is broken", len(words))
	}
	return words
}

// The pre-check of @detectSQLi (injection.go) never hides what libinjection would flag:
// every value of the shapes letters, digits and '_' can form (up to two numbers, then one
// word of any keyword type) is not SQL injection to libinjection; random ones neither.
func TestSQLiPrecheckAgreesWithLibinjection(t *testing.T) {
	words := append(libinjectionWords(t), "", "abc", "_x", "e", "f", "u", strings.Repeat("union", 8))
	// Numbers as libinjection reads them: hex and binary literals and the barewords 0x/0b,
	// exponents ("1e" alone is dropped), the Oracle d/f suffix before u ("1fUNION").
	firsts := []string{"", "1", "42", "0", "0x", "0b", "0x1f", "0b1", "0b10", "1e5", "1e", "1f", "1d", "1F", "0xfu"}
	seconds := []string{"", "2", "9", "2e5", "3f", "2e"}
	checked := 0
	for _, a := range firsts {
		for _, b := range seconds {
			for _, w := range words {
				v := a + b + w
				if sqliNeedsLibinjection(v) {
					t.Fatalf("shape %q holds a byte outside the pre-check's class", v)
				}
				if flagged, fp := libinjection.IsSQLi(v); flagged {
					t.Fatalf("libinjection flags %q (fingerprint %s): the pre-check would hide it", v, fp)
				}
				checked++
			}
		}
	}
	r := rand.New(rand.NewSource(25))
	alphabet := "abcdefxyzABCDEFXYZ0123456789_"
	for i := 0; i < 200_000; i++ {
		var b strings.Builder
		for n := r.Intn(4) + 1; n > 0; n-- {
			if r.Intn(2) == 0 {
				b.WriteString(words[r.Intn(len(words))])
			} else {
				for m := r.Intn(4) + 1; m > 0; m-- {
					b.WriteByte(alphabet[r.Intn(len(alphabet))])
				}
			}
		}
		if flagged, fp := libinjection.IsSQLi(b.String()); flagged {
			t.Fatalf("libinjection flags %q (fingerprint %s): the pre-check would hide it", b.String(), fp)
		}
	}
	t.Logf("%d shapes and 200,000 random values checked", checked)

	op := detectSQLi{}
	for _, a := range []string{"1' OR '1'='1", "1 union select password from users--", "admin'--", "' or sleep(5)#", "1;DROP TABLE users", "-1 OR 1=1"} {
		st := &state{capturing: true}
		if !op.Evaluate(st, a) {
			t.Errorf("@detectSQLi misses %q", a)
		} else if _, fp := libinjection.IsSQLi(a); st.captures[0] != fp {
			t.Errorf("%q: captured %q, libinjection's fingerprint %q", a, st.captures[0], fp)
		}
	}
}

// go test -fuzz FuzzSQLiPrecheck ./wafext/ searches further; the seeds run with the tests.
func FuzzSQLiPrecheck(f *testing.F) {
	for _, s := range []string{"", "1", "0b12union", "1funion", "true", "null", "item_7", "1' or 1=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if flagged, _ := libinjection.IsSQLi(v); flagged && !sqliNeedsLibinjection(v) {
			t.Fatalf("libinjection flags %q, which the pre-check skips", v)
		}
	})
}
