package dnscheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// redactor removes every value of the provider object from text: the words of a
// provider's error may quote what it was given.
type redactor struct {
	providerName string
	secrets      []string
}

// Values shorter than this are not secrets anyone issues, and replacing them would
// garble every word ("1", "true").
const minRedacted = 4

func newRedactor(raw json.RawMessage, public []string) redactor {
	r := redactor{providerName: "the provider"}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return r
	}
	if n, ok := obj["name"].(string); ok && n != "" {
		r.providerName = n
	}
	keep := map[string]bool{"name": true}
	for _, f := range public {
		keep[f] = true
	}
	for k, v := range obj {
		if !keep[k] {
			collectStrings(v, &r.secrets)
		}
	}
	// Longest first, so a value that contains another goes whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func collectStrings(v any, out *[]string) {
	switch t := v.(type) {
	case string:
		if len(t) >= minRedacted {
			*out = append(*out, t)
			// A value is often quoted in an escaped form (JSON, Go's %q).
			if q, err := json.Marshal(t); err == nil && string(q[1:len(q)-1]) != t {
				*out = append(*out, string(q[1:len(q)-1]))
			}
		}
	case map[string]any:
		for _, x := range t {
			collectStrings(x, out)
		}
	case []any:
		for _, x := range t {
			collectStrings(x, out)
		}
	case float64:
		// Numbers are not credentials.
	}
}

func (r redactor) clean(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

type errKind int

const (
	kindOther errKind = iota
	kindAuth
	kindZone
	kindRefused
	kindNetwork
)

// The words providers use, over HTTP APIs (status codes and messages) and DNS
// (RFC 2136 rcodes and TSIG errors as miekg/dns spells them). An error matches the
// first kind whose pattern it contains.
var (
	authPattern   = regexp.MustCompile(`(?i)\b401\b|unauthori[sz]ed|unauthenticated|authenticat|invalid (api )?(token|key|credential|secret|signature)|bad signature|badsig|badkey|badtime|notauth|access denied|forbidden|\b403\b|invalid_grant|permission denied|not authorized|signature`)
	zonePattern   = regexp.MustCompile(`(?i)notzone|nxdomain|zone.{0,40}not (found|exist)|no (such )?zone|unknown zone|could not find zone|zone .* not managed|domain.{0,40}not (found|exist)|\b404\b|not found`)
	refusePattern = regexp.MustCompile(`(?i)refused|not allowed|not permitted`)
	netPattern    = regexp.MustCompile(`(?i)dial |connection reset|no route|i/o timeout|timeout|no such host|deadline exceeded|eof`)
)

func classify(err error) errKind {
	if errors.Is(err, context.DeadlineExceeded) {
		return kindNetwork
	}
	s := err.Error()
	switch {
	case authPattern.MatchString(s):
		return kindAuth
	case zonePattern.MatchString(s):
		return kindZone
	// "connection refused" is the network's, before the provider's refusal.
	case strings.Contains(strings.ToLower(s), "connection refused"):
		return kindNetwork
	case refusePattern.MatchString(s):
		return kindRefused
	case netPattern.MatchString(s):
		return kindNetwork
	}
	return kindOther
}

type visibility struct {
	ok     bool
	detail string
}

// pollEvery is how often the authoritative servers are asked again.
var pollEvery = 500 * time.Millisecond

// waitVisible asks each authoritative server (the given ones, or the zone's NS)
// until all of them answer the TXT value, or the wait is over.
func waitVisible(ctx context.Context, zone, fqdn, value string, resolvers []string, wait time.Duration) visibility {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	servers := resolvers
	if len(servers) == 0 {
		found, err := authoritativeServers(ctx, zone)
		if err != nil {
			return visibility{false, fmt.Sprintf("could not find the authoritative servers of %s to look for the record: %v", zone, err)}
		}
		servers = found
	}
	var last map[string]string
	for {
		last = map[string]string{}
		missing := 0
		for _, s := range servers {
			seen, why := askTXT(ctx, s, fqdn, value)
			if !seen {
				missing++
				last[s] = why
			}
		}
		if missing == 0 {
			return visibility{true, fmt.Sprintf("the TXT record is visible at %s after %s", strings.Join(servers, ", "), roundSeconds(time.Since(start)))}
		}
		select {
		case <-ctx.Done():
			parts := make([]string, 0, len(last))
			for s, why := range last {
				parts = append(parts, fmt.Sprintf("%s: %s", s, why))
			}
			sort.Strings(parts)
			return visibility{false, fmt.Sprintf("record not visible after %s at %d of %d authoritative servers (%s); the provider took the record but its servers do not answer it yet: a slow provider, or a zone served elsewhere", roundSeconds(time.Since(start)), missing, len(servers), strings.Join(parts, "; "))}
		case <-time.After(pollEvery):
		}
	}
}

func roundSeconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// authoritativeServers: the zone's NS names through the system resolver, each
// address on port 53.
func authoritativeServers(ctx context.Context, zone string) ([]string, error) {
	nss, err := net.DefaultResolver.LookupNS(ctx, zone)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss {
		addrs, err := net.DefaultResolver.LookupHost(ctx, ns.Host)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			out = append(out, net.JoinHostPort(a, "53"))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("none of its %d NS names has an address", len(nss))
	}
	return out, nil
}

// askTXT asks one server, without recursion, whether fqdn has the TXT value.
func askTXT(ctx context.Context, server, fqdn, value string) (bool, string) {
	m := new(dns.Msg)
	m.SetQuestion(fqdn, dns.TypeTXT)
	m.RecursionDesired = false
	m.SetEdns0(1232, false)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	in, _, err := (&dns.Client{Net: "udp"}).ExchangeContext(qctx, m, server)
	if err == nil && in.Truncated {
		in, _, err = (&dns.Client{Net: "tcp"}).ExchangeContext(qctx, m, server)
	}
	if err != nil {
		return false, "no answer: " + err.Error()
	}
	if in.Rcode != dns.RcodeSuccess {
		return false, "answered " + dns.RcodeToString[in.Rcode]
	}
	for _, rr := range in.Answer {
		if txt, ok := rr.(*dns.TXT); ok && strings.Join(txt.Txt, "") == value {
			return true, ""
		}
	}
	return false, "answered without the record"
}
