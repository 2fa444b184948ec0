package wafext

import (
	"strings"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/libinjection-go"
)

// @detectXSS as Coraza v3.3.3's own (libinjection's IsXSS on the transformed value), with
// a pre-check that answers "no" without running libinjection on a value that holds
// neither '<' nor '='. CRS 941100 runs it on every argument and every argument name
// after six transformations; on an ordinary JSON body nearly no value holds either byte,
// and libinjection's five HTML parses per value were a fifth of the fast profile's CPU.
//
// Why the answer is the same (libinjection-go v0.3.2, xss.go and html5.go): IsXSS is
// true only when one of its five parses yields a DOCTYPE, an opening tag name, a comment,
// or an attribute value that follows a dangerous attribute name. Without '<' none of the
// parses ever leaves the data, attribute-name, tag-close and self-close states for a tag,
// doctype or comment state (each is entered only from the tag-open state, after '<').
// An attribute value follows an attribute name only through '=' (stateAttributeName and
// stateAfterAttributeName); the quoted starting states yield one leading value with no
// attribute name before it, which IsXSS ignores. So without both bytes every parse
// yields only text, attribute names, tag closes and that leading value: IsXSS is false.
// TestXSSPrecheckAgreesWithLibinjection checks this on attacks and on generated values.
type detectXSS struct{}

var _ plugintypes.Operator = detectXSS{}

func newDetectXSS(plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	return detectXSS{}, nil
}

// xssNeedsLibinjection: false only when libinjection's IsXSS is provably false (above).
func xssNeedsLibinjection(value string) bool {
	return strings.ContainsAny(value, "<=")
}

func (detectXSS) Evaluate(_ plugintypes.TransactionState, value string) bool {
	return xssNeedsLibinjection(value) && libinjection.IsXSS(value)
}

func registerXSS() { plugins.RegisterOperator("detectXSS", newDetectXSS) }
