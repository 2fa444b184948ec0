package wafext

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
)

// The WAF's own cost on the request bench/waf.bench.ts sends (a 2 KB JSON POST of 20
// objects, 160 values), without Caddy, the network or the load generator around it: for
// comparing changes to the engine (operators, build flags) on a shared machine, where
// the proxy benchmark's figures move with the load. The directives are what the panel's
// builder emits for a JSON API host (testdata, kept equal to the builder by
// tests/unit/proxy-build-waf.test.ts).
//
//	go test -tags re2_cgo,memoize_builders -run XXX -bench Engine -benchmem ./wafext/
//
// Its instruction count does not move with the load: valgrind --tool=callgrind on the
// test binary with -test.bench EngineFast -test.benchtime 2000x.
func BenchmarkEngineFastJSON2K(b *testing.B) { benchProfile(b, "fast") }
func BenchmarkEngineFullJSON2K(b *testing.B) { benchProfile(b, "full") }

func benchJSONBody() string {
	items := make([]map[string]any, 20)
	for i := range items {
		items[i] = map[string]any{
			"id": i, "name": fmt.Sprintf("item-%d", i), "sku": fmt.Sprintf("SKU-%04d", i), "price": 12.5 + float64(i),
			"qty": i % 7, "color": "red", "active": true, "note": "ok",
		}
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	return string(body)
}

func engineWAF(tb testing.TB, profile string) coraza.WAF {
	text, err := os.ReadFile(filepath.Join("testdata", profile+"-json-api.conf"))
	if err != nil {
		tb.Fatal(err)
	}
	directives := strings.ReplaceAll(string(text), "/var/log/panel/", tb.TempDir()+"/")
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithDirectives(directives))
	if err != nil {
		tb.Fatalf("%s: %v", profile, err)
	}
	return waf
}

func benchProfile(b *testing.B, profile string) {
	waf := engineWAF(b, profile)
	body := []byte(benchJSONBody())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := waf.NewTransaction()
		tx.ProcessConnection("127.0.0.1", 40000, "127.0.0.1", 80)
		tx.ProcessURI("/api/orders", "POST", "HTTP/1.1")
		tx.AddRequestHeader("Host", "fast.bench.test")
		tx.AddRequestHeader("Content-Type", "application/json")
		tx.AddRequestHeader("Content-Length", fmt.Sprint(len(body)))
		tx.AddRequestHeader("User-Agent", "autocannon")
		if it := tx.ProcessRequestHeaders(); it != nil {
			b.Fatalf("headers interrupted: rule %d", it.RuleID)
		}
		if _, _, err := tx.WriteRequestBody(body); err != nil {
			b.Fatal(err)
		}
		if it, err := tx.ProcessRequestBody(); err != nil || it != nil {
			b.Fatalf("body: %v %v", it, err)
		}
		tx.ProcessLogging()
		tx.Close()
	}
}
