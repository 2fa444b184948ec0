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

// @detectSQLi as Coraza v3.3.3's own (libinjection's IsSQLi, its fingerprint captured as
// TX.0 on a match), with a pre-check that answers "no" without running libinjection on a
// value made only of ASCII letters, digits and '_' (an id, a count, a word, true, null).
// CRS 942100 runs it on every argument and every argument name.
//
// Why the answer is the same (libinjection-go v0.3.2, sqli.go, sqli_parse.go): such a value
// holds no quote, so IsSQLi fingerprints it once, as written, and never as MySQL (that
// needs a comment). Its tokens: a word swallows every letter, digit and '_' up to the end,
// so a word is always the last token; before it only numbers can stand, and a number can
// be followed by another only after a binary literal (0b1 then 2...), so there are at most
// three tokens: [number or the bareword 0x/0b] [number] [one word, of any keyword type].
// TestSQLiPrecheckAgreesWithLibinjection runs IsSQLi on every such shape with every word
// of libinjection's keyword table: none is SQL injection to it (the short fingerprints of
// its list all need a comment, a string or a variable, or are whitelisted, like "1U").
type detectSQLi struct{}

var _ plugintypes.Operator = detectSQLi{}

func newDetectSQLi(plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	return detectSQLi{}, nil
}

// sqliNeedsLibinjection: false only when libinjection's IsSQLi is provably false (above).
func sqliNeedsLibinjection(value string) bool {
	for i := 0; i < len(value); i++ {
		c := value[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return true
		}
	}
	return false
}

func (detectSQLi) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !sqliNeedsLibinjection(value) {
		return false
	}
	matched, fingerprint := libinjection.IsSQLi(value)
	if matched {
		tx.CaptureField(0, fingerprint)
	}
	return matched
}

func registerSQLi() { plugins.RegisterOperator("detectSQLi", newDetectSQLi) }
