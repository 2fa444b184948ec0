// Package dnscheck is the proxy's DNS credentials check (docs/dns-check.md): an
// admin API route that writes a TXT record through a DNS provider
// module, waits until the zone's authoritative servers answer it, and removes it,
// reporting each step in words.
//
// It loads the provider exactly as the ACME issuer's dns challenge does (Caddy's
// module loading of the `dns.providers` namespace, inline key `name`), so the
// check runs the code an order would run, for every provider compiled in, with no
// per-vendor code here. The credentials come in the request body and live only in
// this request's memory; every value of the provider object is removed from the
// words before they are answered, because a provider's error may quote what it was
// given (caddy-dns/cloudflare quotes a malformed token).
package dnscheck

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

func init() {
	caddy.RegisterModule(Check{})
}

// Check is the admin API module `admin.api.panel_dns_check`: POST /panel/dns-check.
// It listens wherever the admin API does (the panel's side of the node only).
type Check struct{}

// CaddyModule returns the Caddy module information.
func (Check) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.panel_dns_check",
		New: func() caddy.Module { return new(Check) },
	}
}

// Routes returns the check's one route.
func (c *Check) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/panel/dns-check", Handler: caddy.AdminHandlerFunc(c.serve)}}
}

const (
	defaultName        = "_panel-check"
	defaultPropagation = 60 * time.Second
	maxPropagation     = 10 * time.Minute
	providerCallLimit  = 60 * time.Second
	recordTTL          = 60 * time.Second
	maxBodyBytes       = 64 << 10
)

// Request is the body of POST /panel/dns-check.
type Request struct {
	// The provider object as the ACME issuer's dns challenge holds it, with "name".
	ProviderRaw json.RawMessage `json:"provider,omitempty" caddy:"namespace=dns.providers inline_key=name"`
	// The zone the provider manages, such as "example.com." (the final dot is optional).
	Zone string `json:"zone"`
	// The record's name relative to the zone; "_panel-check" when empty.
	Name string `json:"name,omitempty"`
	// How long to wait for the record at the authoritative servers ("60s" when empty).
	PropagationTimeout caddy.Duration `json:"propagation_timeout,omitempty"`
	// The servers to ask (host:port), taken as authoritative for the zone; when empty,
	// the zone's NS records are looked up and each server is asked on port 53.
	Resolvers []string `json:"resolvers,omitempty"`
	// Challenge delegation: a name (such as _acme-challenge.www.example.com.) that must
	// be a CNAME to the record the check writes, as the ACME issuer's
	// dns_challenge_override_domain needs. Checked as the step "delegation" at the
	// resolvers when they answer for its zone, else at its zone's NS.
	DelegatedFrom string `json:"delegated_from,omitempty"`
	// Fields of the provider object that are not secret and may appear in the words
	// (an rfc2136 server's address, say); every other value is redacted.
	PublicFields []string `json:"public_fields,omitempty"`
}

// Step is one stage of the check as the panel shows it.
type Step struct {
	Step   string `json:"step"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Result is the answer: ok when every step is.
type Result struct {
	OK    bool   `json:"ok"`
	Steps []Step `json:"steps"`
}

// Provider is what the check needs of a provider module: what an ACME DNS-01 order needs.
type Provider interface {
	libdns.RecordAppender
	libdns.RecordDeleter
}

func (c *Check) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
	}
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	// The decoder's own errors name a field or a position, never a value of the body.
	if err := dec.Decode(&req); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("the body must be a JSON object of the check request: %v", err)}
	}
	if msg := req.problem(); msg != "" {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(msg)}
	}
	res := Run(r.Context(), req, loadProvider)
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(res)
}

// Labels of letters, digits, - and _ (a provider's own names, _acme-challenge, are allowed).
var dnsName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$`)

func (req *Request) problem() string {
	if len(req.ProviderRaw) == 0 {
		return `provider: the provider object (with "name") is required`
	}
	if !dnsName.MatchString(strings.TrimSuffix(req.Zone, ".")) {
		return "zone: must be a DNS zone name such as example.com."
	}
	if req.Name != "" {
		if !dnsName.MatchString(req.Name) {
			return "name: must be a name relative to the zone, such as _panel-check"
		}
	}
	if req.PropagationTimeout < 0 || time.Duration(req.PropagationTimeout) > maxPropagation {
		return fmt.Sprintf("propagation_timeout: must be between 1s and %s", maxPropagation)
	}
	if req.DelegatedFrom != "" && !dnsName.MatchString(strings.TrimSuffix(req.DelegatedFrom, ".")) {
		return "delegated_from: must be a DNS name such as _acme-challenge.www.example.com."
	}
	for _, s := range req.Resolvers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return "resolvers: each must be host:port, such as 192.0.2.53:53"
		}
	}
	return ""
}

// Loader turns the request's provider object into a provider; the cleanup releases it.
type Loader func(req *Request) (Provider, func(), error)

// loadProvider loads the provider the way the ACME issuer does, in a context of its
// own: not the running configuration's, whose cancellation would run that
// configuration's cleanups.
func loadProvider(req *Request) (Provider, func(), error) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	val, err := ctx.LoadModule(req, "ProviderRaw")
	if err != nil {
		cancel()
		return nil, func() {}, err
	}
	p, ok := val.(Provider)
	if !ok {
		cancel()
		return nil, func() {}, fmt.Errorf("module %T cannot add and delete records", val)
	}
	return p, cancel, nil
}

// Run performs the check. Every word of the result has gone through the redaction
// of the provider object's values.
func Run(ctx context.Context, req Request, load Loader) Result {
	red := newRedactor(req.ProviderRaw, req.PublicFields)
	providerName := red.providerName
	zone := dns.Fqdn(strings.ToLower(req.Zone))
	name := req.Name
	if name == "" {
		name = defaultName
	}
	fqdn := dns.Fqdn(name + "." + zone)
	wait := time.Duration(req.PropagationTimeout)
	if wait == 0 {
		wait = defaultPropagation
	}
	var steps []Step
	add := func(step string, ok bool, detail string) {
		steps = append(steps, Step{Step: step, OK: ok, Detail: red.clean(detail)})
	}
	done := func() Result {
		ok := len(steps) > 0
		for _, s := range steps {
			ok = ok && s.OK
		}
		return Result{OK: ok, Steps: steps}
	}

	provider, release, err := load(&req)
	defer release()
	if err != nil {
		add("authenticate", false, fmt.Sprintf("the proxy's %s module refused the credentials: %v", providerName, err))
		return done()
	}

	value := randomValue()
	callCtx, cancel := context.WithTimeout(ctx, providerCallLimit)
	written, err := provider.AppendRecords(callCtx, zone, []libdns.Record{libdns.TXT{Name: name, TTL: recordTTL, Text: value}})
	cancel()
	if err != nil {
		kind := classify(err)
		if kind == kindAuth {
			add("authenticate", false, fmt.Sprintf("authentication refused: %s did not accept the credentials (%v)%s", providerName, err, authHint(err, zone)))
			return done()
		}
		add("authenticate", true, fmt.Sprintf("the %s module loaded the credentials", providerName))
		add("write", false, writeFailure(kind, providerName, zone, fqdn, err))
		return done()
	}
	add("authenticate", true, fmt.Sprintf("%s accepted the credentials", providerName))
	add("write", true, fmt.Sprintf("TXT record %s written in zone %s", fqdn, zone))
	if len(written) == 0 {
		// Some providers answer nothing for an append; delete what was asked for.
		written = []libdns.Record{libdns.TXT{Name: name, TTL: recordTTL, Text: value}}
	}

	visible := waitVisible(ctx, zone, fqdn, value, req.Resolvers, wait)
	add("visible", visible.ok, visible.detail)
	if req.DelegatedFrom != "" {
		d := checkDelegation(ctx, dns.Fqdn(strings.ToLower(req.DelegatedFrom)), fqdn, req.Resolvers)
		add("delegation", d.ok, d.detail)
	}

	// The record goes even when the panel has gone: a context of its own.
	rmCtx, rmCancel := context.WithTimeout(context.Background(), providerCallLimit)
	_, err = provider.DeleteRecords(rmCtx, zone, written)
	rmCancel()
	if err != nil {
		add("remove", false, fmt.Sprintf("removal failed: %s could not delete the TXT record %s (%v); delete it by hand", providerName, fqdn, err))
	} else {
		add("remove", true, fmt.Sprintf("TXT record %s removed", fqdn))
	}
	return done()
}

// authHint adds what an ambiguous refusal can mean. miekg/dns turns every NOTAUTH
// answer into "bad authentication", and a DNS server answers NOTAUTH both to a TSIG
// key it does not accept (RFC 8945) and to an update for a zone it does not serve
// (RFC 2136).
func authHint(err error, zone string) string {
	if strings.Contains(err.Error(), "bad authentication") {
		return fmt.Sprintf("; the server answered NOTAUTH: the TSIG key name, algorithm or secret is not one it knows, or it is not the primary server of the zone %s", zone)
	}
	return ""
}

func writeFailure(kind errKind, provider, zone, fqdn string, err error) string {
	switch kind {
	case kindZone:
		return fmt.Sprintf("zone not found: %s has no zone %s for these credentials (%v)", provider, zone, err)
	case kindRefused:
		return fmt.Sprintf("write refused: %s did not let these credentials add the TXT record %s (%v)", provider, fqdn, err)
	case kindNetwork:
		return fmt.Sprintf("%s could not be reached to write the TXT record %s (%v)", provider, fqdn, err)
	}
	return fmt.Sprintf("writing the TXT record %s failed: %v", fqdn, err)
}

func randomValue() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "panel-check-" + base64.RawURLEncoding.EncodeToString(b)
}
