package wafext

import (
	"math/rand"
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
