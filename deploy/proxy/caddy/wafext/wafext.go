// Package wafext replaces some of Coraza's operators and body processors in the
// production Caddy: faster matching (RE2 through cgo) and request body limits that
// the panel sets per host. Imported by main.go; everything registers in init, before
// Caddy provisions any WAF (operators and processors are looked up when rules compile
// and when a body is read).
package wafext

import (
	"fmt"
	"os"
	"strings"

	wasilibs "github.com/corazawaf/coraza-wasilibs"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
)

// OperatorsEnv names the operators replaced by faster implementations. Unset: the
// production choice (DefaultOperators). "none": Coraza's own pure-Go operators, kept
// for the A/B of bench/waf.bench.ts on the very same binary.
const OperatorsEnv = "EDGE_WAF_OPERATORS"

// DefaultOperators: rx on RE2 through cgo; pm on Aho-Corasick compiled to WebAssembly
// (coraza-wasilibs; its cgo build needs a Rust library that Debian does not ship);
// detectXSS and detectSQLi on Coraza's libinjection behind pre-checks that skip the values
// it cannot flag (injection.go). detectXSS on WebAssembly was measured no faster than Coraza's Go
// one: left out. Figures: docs/edge-build.md.
const DefaultOperators = "rx,pm,xss,sqli"

var operatorRegistrations = map[string]func(){
	"rx":           func() { plugins.RegisterOperator("rx", newRE2RX) },
	"wasilibs-rx":  wasilibs.RegisterRX, // coraza-wasilibs' own rx (capturing search on every input): for comparison only
	"pm":           wasilibs.RegisterPM,
	"xss":          registerXSS,
	"sqli":         registerSQLi,
	"wasilibs-xss": wasilibs.RegisterXSS, // libinjection compiled to WebAssembly: for comparison only
}

// RegisterOperators applies a spec such as "rx,pm" or "none".
func RegisterOperators(spec string) error {
	if spec == "none" {
		return nil
	}
	for _, name := range strings.Split(spec, ",") {
		register, ok := operatorRegistrations[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("%s=%q: unknown operator %q (known: rx, pm, xss, sqli, wasilibs-rx, wasilibs-xss, or none)", OperatorsEnv, spec, name)
		}
		register()
	}
	return nil
}

func init() {
	spec, set := os.LookupEnv(OperatorsEnv)
	if !set {
		spec = DefaultOperators
	}
	if err := RegisterOperators(spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	registerBodyProcessors()
}
