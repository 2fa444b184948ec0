package dnscheck

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// checkDelegation: is `from` a CNAME to `target` at the servers authoritative for
// from's zone? The given resolvers are asked first (in a test, or an operator's own
// server, one server holds both zones); a server that does not answer for that zone
// with authority is left for the zone's NS, found through the system resolver.
func checkDelegation(ctx context.Context, from, target string, resolvers []string) visibility {
	fix := fmt.Sprintf("create the record %s CNAME %s in the zone that holds %s", from, target, strings.TrimPrefix(from, "_acme-challenge."))
	var servers []string
	for _, s := range resolvers {
		if answersWithAuthority(ctx, s, from) {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		found, err := serversOfNameZone(ctx, from)
		if err != nil {
			return visibility{false, fmt.Sprintf("could not find the servers that answer for %s: %v; %s", from, err, fix)}
		}
		servers = found
	}
	var wrong []string
	for _, s := range servers {
		got, why := askCNAME(ctx, s, from)
		switch {
		case got == "":
			wrong = append(wrong, fmt.Sprintf("%s: %s", s, why))
		case !strings.EqualFold(got, target):
			wrong = append(wrong, fmt.Sprintf("%s: %s is a CNAME to %s", s, from, got))
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		return visibility{false, fmt.Sprintf("delegation not in place: %s; %s", strings.Join(wrong, "; "), fix)}
	}
	return visibility{true, fmt.Sprintf("%s is a CNAME to %s at %s", from, target, strings.Join(servers, ", "))}
}

func answersWithAuthority(ctx context.Context, server, name string) bool {
	in, err := exchange(ctx, server, name, dns.TypeCNAME)
	return err == nil && in.Authoritative && (in.Rcode == dns.RcodeSuccess || in.Rcode == dns.RcodeNameError)
}

func askCNAME(ctx context.Context, server, name string) (string, string) {
	in, err := exchange(ctx, server, name, dns.TypeCNAME)
	if err != nil {
		return "", "no answer: " + err.Error()
	}
	if in.Rcode == dns.RcodeNameError {
		return "", "no CNAME at " + name + " (the name does not exist)"
	}
	if in.Rcode != dns.RcodeSuccess {
		return "", "answered " + dns.RcodeToString[in.Rcode] + " for " + name
	}
	for _, rr := range in.Answer {
		if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
			return c.Target, ""
		}
	}
	return "", "no CNAME at " + name
}

func exchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	m.SetEdns0(1232, false)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	in, _, err := (&dns.Client{Net: "udp"}).ExchangeContext(qctx, m, server)
	if err == nil && in.Truncated {
		in, _, err = (&dns.Client{Net: "tcp"}).ExchangeContext(qctx, m, server)
	}
	return in, err
}

// serversOfNameZone walks up from name to the first ancestor with NS records (its zone).
func serversOfNameZone(ctx context.Context, name string) ([]string, error) {
	labels := dns.SplitDomainName(name)
	for i := 1; i < len(labels); i++ {
		zone := strings.Join(labels[i:], ".") + "."
		if nss, err := net.DefaultResolver.LookupNS(ctx, zone); err == nil && len(nss) > 0 {
			return authoritativeServers(ctx, zone)
		}
	}
	return nil, fmt.Errorf("no zone above %s has NS records", name)
}
