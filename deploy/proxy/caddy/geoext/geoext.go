// Package geoext is the proxy side of a host's (or a path rule's) geo and network
// policy (docs/access-control.md, "Enforcement in the proxy"): a request matcher
// that looks the client address up in the MaxMind-format databases the panel keeps
// and matches when the policy refuses it. The panel's route answers 403 on a match.
package geoext

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(&MatchGeoRefused{})
}

// Rule is one rule of a policy: it matches a client whose address is in one of
// CIDRs (the panel has already added the access list's ranges), or whose country,
// continent or AS number is listed.
type Rule struct {
	Action     string   `json:"action"`
	Countries  []string `json:"countries,omitempty"`
	Continents []string `json:"continents,omitempty"`
	ASNs       []uint32 `json:"asns,omitempty"`
	CIDRs      []string `json:"cidrs,omitempty"`

	prefixes   []netip.Prefix
	countries  map[string]struct{}
	continents map[string]struct{}
	asns       map[uint32]struct{}
}

// MatchGeoRefused matches a request the policy refuses. Rules are read in order
// and the first that matches decides; no rule matching gives Default. An address
// the country database does not place (or every address, while the file is
// missing) is unknown: its rules still apply first (a CIDR or AS rule can match
// it), then UnknownAddress decides: "allow", "deny", or "allow_lan" (private and
// loopback ranges allowed, every other unknown address gets Default).
type MatchGeoRefused struct {
	CountryDB      string `json:"country_db"`
	ASNDB          string `json:"asn_db,omitempty"`
	Rules          []Rule `json:"rules,omitempty"`
	Default        string `json:"default"`
	UnknownAddress string `json:"unknown_address,omitempty"`

	country  *database
	asn      *database
	needASN  bool
	refusing bool // Default == "deny"
}

// The panel's LAN ranges (LAN_RANGES in server/utils/proxy/build/lan-gate.ts, LAN_CIDRS in geo/ip.ts).
var lanPrefixes = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

// CaddyModule returns the Caddy module information.
func (*MatchGeoRefused) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.matchers.panel_geo_refused",
		New: func() caddy.Module { return new(MatchGeoRefused) },
	}
}

func validAction(a string) bool { return a == "allow" || a == "deny" }

// Provision parses the rules once and takes the shared readers. A missing file is
// no error: the configuration is accepted and every address is unknown until the
// panel's refresh writes one (a push never fails on it).
func (m *MatchGeoRefused) Provision(caddy.Context) error {
	if m.UnknownAddress == "" {
		m.UnknownAddress = "allow_lan"
	}
	for i := range m.Rules {
		r := &m.Rules[i]
		if !validAction(r.Action) {
			return fmt.Errorf("panel_geo_refused: rule %d: action must be allow or deny, got %q", i, r.Action)
		}
		r.prefixes = nil
		for _, c := range r.CIDRs {
			p, err := parsePrefix(c)
			if err != nil {
				return fmt.Errorf("panel_geo_refused: rule %d: %v", i, err)
			}
			r.prefixes = append(r.prefixes, p)
		}
		r.countries = setOf(r.Countries, strings.ToUpper)
		r.continents = setOf(r.Continents, strings.ToUpper)
		r.asns = make(map[uint32]struct{}, len(r.ASNs))
		for _, a := range r.ASNs {
			r.asns[a] = struct{}{}
		}
		m.needASN = m.needASN || len(r.ASNs) > 0
	}
	m.refusing = m.Default == "deny"
	var err error
	if m.country, err = openShared(m.CountryDB); err != nil {
		return err
	}
	if m.needASN && m.ASNDB != "" {
		if m.asn, err = openShared(m.ASNDB); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup gives the shared readers back; the last user closes them.
func (m *MatchGeoRefused) Cleanup() error {
	if m.country != nil {
		releaseShared(m.CountryDB)
	}
	if m.asn != nil {
		releaseShared(m.ASNDB)
	}
	return nil
}

// Validate refuses what the panel never writes.
func (m *MatchGeoRefused) Validate() error {
	if m.CountryDB == "" {
		return fmt.Errorf("panel_geo_refused: country_db is required (the path of country.mmdb)")
	}
	if !validAction(m.Default) {
		return fmt.Errorf("panel_geo_refused: default must be allow or deny, got %q", m.Default)
	}
	switch m.UnknownAddress {
	case "allow_lan", "allow", "deny":
	default:
		return fmt.Errorf("panel_geo_refused: unknown_address must be allow_lan, allow or deny, got %q", m.UnknownAddress)
	}
	return nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR range", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR range", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func setOf(items []string, norm func(string) string) map[string]struct{} {
	s := make(map[string]struct{}, len(items))
	for _, i := range items {
		s[norm(i)] = struct{}{}
	}
	return s
}

// clientAddr is the address Caddy decided: the client_ip variable, which honours
// the server's trusted_proxies (a header counts only from a trusted peer), else the peer.
func clientAddr(r *http.Request) (netip.Addr, bool) {
	if v, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && v != "" {
		if a, err := netip.ParseAddr(v); err == nil {
			return a.Unmap(), true
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Refuses is the policy's answer for one address (true: refused).
func (m *MatchGeoRefused) Refuses(addr netip.Addr) bool {
	ip := net.IP(addr.AsSlice())
	cc, cont := m.country.country(ip)
	var asn uint32
	if m.asn != nil {
		asn = m.asn.asn(ip)
	}
	for i := range m.Rules {
		r := &m.Rules[i]
		if r.matches(addr, cc, cont, asn) {
			return r.Action == "deny"
		}
	}
	if cc == "" {
		switch m.UnknownAddress {
		case "allow":
			return false
		case "deny":
			return true
		default: // allow_lan
			for _, p := range lanPrefixes {
				if p.Contains(addr) {
					return false
				}
			}
		}
	}
	return m.refusing
}

func (r *Rule) matches(addr netip.Addr, cc, cont string, asn uint32) bool {
	for _, p := range r.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	if cc != "" {
		if _, ok := r.countries[cc]; ok {
			return true
		}
	}
	if cont != "" {
		if _, ok := r.continents[cont]; ok {
			return true
		}
	}
	if asn != 0 {
		if _, ok := r.asns[asn]; ok {
			return true
		}
	}
	return false
}

// MatchWithError matches a refused request. An address Caddy could not parse
// (a unix socket listener) is refused when the default refuses: never an open door.
func (m *MatchGeoRefused) MatchWithError(r *http.Request) (bool, error) {
	addr, ok := clientAddr(r)
	if !ok {
		return m.refusing, nil
	}
	return m.Refuses(addr), nil
}

// Match is MatchWithError for the older interface.
func (m *MatchGeoRefused) Match(r *http.Request) bool {
	ok, _ := m.MatchWithError(r)
	return ok
}

// Interface guards
var (
	_ caddy.Provisioner                 = (*MatchGeoRefused)(nil)
	_ caddy.CleanerUpper                = (*MatchGeoRefused)(nil)
	_ caddy.Validator                   = (*MatchGeoRefused)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchGeoRefused)(nil)
	_ caddyhttp.RequestMatcher          = (*MatchGeoRefused)(nil)
)
