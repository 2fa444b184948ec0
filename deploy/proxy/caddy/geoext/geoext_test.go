package geoext

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// testdata/*.mmdb place 198.51.100.0/24 in FR (EU) or US (NA), AS 64500; written by
// tests/support/mmdb-writer.ts.

func provisioned(t *testing.T, m *MatchGeoRefused) *MatchGeoRefused {
	t.Helper()
	if err := m.Provision(caddyCtx()); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup() })
	return m
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

var client = netip.MustParseAddr("198.51.100.10")

func TestCountryContinentASNAndFirstMatch(t *testing.T) {
	for _, c := range []struct {
		name  string
		rules []Rule
		def   string
		want  bool
	}{
		{"allowed country", []Rule{{Action: "allow", Countries: []string{"FR"}}}, "deny", false},
		{"other country", []Rule{{Action: "allow", Countries: []string{"DE"}}}, "deny", true},
		{"continent deny", []Rule{{Action: "deny", Continents: []string{"EU"}}}, "allow", true},
		{"AS deny before country allow", []Rule{{Action: "deny", ASNs: []uint32{64500}}, {Action: "allow", Countries: []string{"FR"}}}, "allow", true},
		{"first match wins", []Rule{{Action: "allow", CIDRs: []string{"198.51.100.10"}}, {Action: "deny", Countries: []string{"FR"}}}, "deny", false},
		{"cidr range", []Rule{{Action: "deny", CIDRs: []string{"198.51.100.0/25"}}}, "allow", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := provisioned(t, &MatchGeoRefused{CountryDB: "testdata/country-fr.mmdb", ASNDB: "testdata/asn.mmdb", Rules: c.rules, Default: c.def})
			if got := m.Refuses(client); got != c.want {
				t.Fatalf("refused = %v, want %v", got, c.want)
			}
		})
	}
}

func TestUnknownAddress(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "country.mmdb")
	lan := netip.MustParseAddr("192.168.1.5")
	for _, c := range []struct {
		mode     string
		addr     netip.Addr
		want     bool
		withCIDR bool
	}{
		{"allow_lan", lan, false, false},
		{"allow_lan", client, true, false}, // the default (deny) answers a public unknown address
		{"allow", client, false, false},
		{"deny", lan, true, false},
		{"deny", client, false, true}, // a CIDR rule still applies first
	} {
		rules := []Rule{{Action: "allow", Countries: []string{"FR"}}}
		if c.withCIDR {
			rules = append([]Rule{{Action: "allow", CIDRs: []string{"198.51.100.0/24"}}}, rules...)
		}
		// A missing database is no error: every address is unknown.
		m := provisioned(t, &MatchGeoRefused{CountryDB: missing, Rules: rules, Default: "deny", UnknownAddress: c.mode})
		if got := m.Refuses(c.addr); got != c.want {
			t.Fatalf("%s %s: refused = %v, want %v", c.mode, c.addr, got, c.want)
		}
	}
}

func TestReplacedFileIsReadWithoutReload(t *testing.T) {
	old := recheckEvery
	recheckEvery = 0
	t.Cleanup(func() { recheckEvery = old })
	path := filepath.Join(t.TempDir(), "country.mmdb")
	copyFile(t, "testdata/country-fr.mmdb", path)
	a := provisioned(t, &MatchGeoRefused{CountryDB: path, Rules: []Rule{{Action: "allow", Countries: []string{"FR"}}}, Default: "deny"})
	b := provisioned(t, &MatchGeoRefused{CountryDB: path, Rules: []Rule{{Action: "deny", Countries: []string{"US"}}}, Default: "allow"})
	if a.country != b.country {
		t.Fatal("two matchers on one file must share one reader")
	}
	if a.Refuses(client) || b.Refuses(client) {
		t.Fatal("FR must pass both")
	}
	copyFile(t, "testdata/country-us.mmdb", path)
	if !a.Refuses(client) || !b.Refuses(client) {
		t.Fatal("after the rename the address is in US: both refuse")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !a.Refuses(client) || b.Refuses(client) {
		t.Fatal("missing file: unknown public address gets the default")
	}
}

// The lookup's own cost per request (bench/geo-matcher.bench.ts measures it through Caddy).
func BenchmarkRefuses(b *testing.B) {
	m := &MatchGeoRefused{
		CountryDB: "testdata/country-fr.mmdb",
		ASNDB:     "testdata/asn.mmdb",
		Rules:     []Rule{{Action: "deny", ASNs: []uint32{64501}}, {Action: "allow", Countries: []string{"FR", "BE"}}},
		Default:   "deny",
	}
	if err := m.Provision(caddyCtx()); err != nil {
		b.Fatal(err)
	}
	defer m.Cleanup()
	b.ReportAllocs()
	for b.Loop() {
		if m.Refuses(client) {
			b.Fatal("FR must pass")
		}
	}
}
