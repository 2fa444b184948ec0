package dnscheck

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

// A provider module registered by the test alone (not in the production binary):
// it keeps its records in memory, served by a real DNS server on loopback, and
// fails where the test says, quoting its token as some providers do.
type fakeProvider struct {
	Token      string `json:"token,omitempty"`
	Server     string `json:"server,omitempty"`
	FailAppend string `json:"fail_append,omitempty"`
	FailDelete string `json:"fail_delete,omitempty"`
	Invisible  bool   `json:"invisible,omitempty"`
	Refuse     bool   `json:"refuse,omitempty"`
}

func (fakeProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "dns.providers.panel_test_fake", New: func() caddy.Module { return new(fakeProvider) }}
}

func (p *fakeProvider) Provision(caddy.Context) error {
	if p.Refuse {
		return errors.New("API token '" + p.Token + "' appears invalid")
	}
	return nil
}

var (
	zoneMu    sync.Mutex
	zoneTXT   = map[string]string{}
	zoneCNAME = map[string]string{}
)

func (p *fakeProvider) AppendRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	if p.FailAppend != "" {
		return nil, errors.New(strings.ReplaceAll(p.FailAppend, "TOKEN", p.Token))
	}
	zoneMu.Lock()
	defer zoneMu.Unlock()
	for _, r := range recs {
		rr := r.RR()
		if !p.Invisible {
			zoneTXT[libdns.AbsoluteName(rr.Name, zone)] = rr.Data
		}
	}
	return recs, nil
}

func (p *fakeProvider) DeleteRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	if p.FailDelete != "" {
		return nil, errors.New(strings.ReplaceAll(p.FailDelete, "TOKEN", p.Token))
	}
	zoneMu.Lock()
	defer zoneMu.Unlock()
	for _, r := range recs {
		delete(zoneTXT, libdns.AbsoluteName(r.RR().Name, zone))
	}
	return recs, nil
}

func init() {
	caddy.RegisterModule(fakeProvider{})
	pollEvery = 20 * time.Millisecond
}

func startDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		zoneMu.Lock()
		v, ok := zoneTXT[q.Question[0].Name]
		target, isAlias := zoneCNAME[q.Question[0].Name]
		zoneMu.Unlock()
		if isAlias {
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: target})
		} else if ok {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{v}})
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

const token = "s3cr3t-token-VALUE-0123456789"

func check(t *testing.T, provider map[string]any, timeout string, server string, extra ...string) (int, Result, string) {
	t.Helper()
	provider["name"] = "panel_test_fake"
	provider["token"] = token
	req := map[string]any{
		"provider":            provider,
		"zone":                "example.test.",
		"name":                "_panel-check",
		"propagation_timeout": timeout,
		"resolvers":           []string{server},
	}
	if len(extra) == 1 {
		req["delegated_from"] = extra[0]
	}
	body, _ := json.Marshal(req)
	rec := httptest.NewRecorder()
	err := (&Check{}).serve(rec, httptest.NewRequest(http.MethodPost, "/panel/dns-check", strings.NewReader(string(body))))
	if err != nil {
		var apiErr caddy.APIError
		if errors.As(err, &apiErr) {
			return apiErr.HTTPStatus, Result{}, apiErr.Err.Error()
		}
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatalf("answer %q: %v", rec.Body.String(), err)
	}
	return rec.Code, res, rec.Body.String()
}

func stepNames(r Result) string {
	var s []string
	for _, st := range r.Steps {
		mark := "ok"
		if !st.OK {
			mark = "FAIL"
		}
		s = append(s, st.Step+":"+mark)
	}
	return strings.Join(s, " ")
}

func TestWritesSeesAndRemoves(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{}, "5s", server)
	if !res.OK || stepNames(res) != "authenticate:ok write:ok visible:ok remove:ok" {
		t.Fatalf("steps: %s", raw)
	}
	if !strings.Contains(res.Steps[2].Detail, "visible at "+server) {
		t.Errorf("visible detail: %q", res.Steps[2].Detail)
	}
	zoneMu.Lock()
	defer zoneMu.Unlock()
	if len(zoneTXT) != 0 {
		t.Errorf("records left behind: %v", zoneTXT)
	}
}

func TestAuthenticationRefusedInWordsWithoutTheToken(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{"fail_append": `401 Unauthorized: token "TOKEN" is not valid`}, "5s", server)
	if res.OK || stepNames(res) != "authenticate:FAIL" {
		t.Fatalf("steps: %s", raw)
	}
	if !strings.HasPrefix(res.Steps[0].Detail, "authentication refused") {
		t.Errorf("detail: %q", res.Steps[0].Detail)
	}
	if strings.Contains(raw, token) || !strings.Contains(raw, "[redacted]") {
		t.Errorf("the token is not redacted: %s", raw)
	}
}

func TestModuleRefusingTheCredentials(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{"refuse": true}, "5s", server)
	if res.OK || stepNames(res) != "authenticate:FAIL" || strings.Contains(raw, token) {
		t.Fatalf("steps: %s", raw)
	}
	if !strings.Contains(res.Steps[0].Detail, "module refused the credentials") {
		t.Errorf("detail: %q", res.Steps[0].Detail)
	}
}

func TestZoneNotFound(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{"fail_append": "zone example.test. not found"}, "5s", server)
	if res.OK || stepNames(res) != "authenticate:ok write:FAIL" || !strings.HasPrefix(res.Steps[1].Detail, "zone not found") {
		t.Fatalf("steps: %s", raw)
	}
}

func TestNotVisibleIsReportedAndTheRecordStillRemoved(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{"invisible": true}, "1s", server)
	if res.OK || stepNames(res) != "authenticate:ok write:ok visible:FAIL remove:ok" {
		t.Fatalf("steps: %s", raw)
	}
	if !strings.HasPrefix(res.Steps[2].Detail, "record not visible after 1.") {
		t.Errorf("detail: %q", res.Steps[2].Detail)
	}
}

func TestRemovalFailed(t *testing.T) {
	server := startDNS(t)
	_, res, raw := check(t, map[string]any{"fail_delete": "500 internal error for TOKEN"}, "5s", server)
	if res.OK || stepNames(res) != "authenticate:ok write:ok visible:ok remove:FAIL" || strings.Contains(raw, token) {
		t.Fatalf("steps: %s", raw)
	}
	if !strings.HasPrefix(res.Steps[3].Detail, "removal failed") {
		t.Errorf("detail: %q", res.Steps[3].Detail)
	}
	zoneMu.Lock()
	clear(zoneTXT)
	zoneMu.Unlock()
}

func TestBadRequestsNameTheField(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"zone":"example.test."}`, "provider:"},
		{`{"provider":{"name":"panel_test_fake"},"zone":"bad zone!"}`, "zone:"},
		{`{"provider":{"name":"panel_test_fake"},"zone":"example.test.","resolvers":["nope"]}`, "resolvers:"},
		{`{"provider":{"name":"panel_test_fake"},"zone":"example.test.","propagation_timeout":"1h"}`, "propagation_timeout:"},
		{`{"provider":{"name":"panel_test_fake"},"zone":"example.test.","extra":1}`, "extra"},
		{`{"provider":{"name":"panel_test_fake"},"zone":"example.test.","delegated_from":"a b"}`, "delegated_from:"},
	} {
		err := (&Check{}).serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/panel/dns-check", strings.NewReader(c.body)))
		var apiErr caddy.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatus != 400 || !strings.Contains(apiErr.Err.Error(), c.want) {
			t.Errorf("%s: %v", c.body, err)
		}
	}
}

func TestRedaction(t *testing.T) {
	raw := json.RawMessage(`{"name":"rfc2136","server":"127.0.0.1:53","key":"c2VjcmV0IGtleSB2YWx1ZQ==","key_name":"acme","nested":{"a":["deep-secret-1"]},"quoted":"a\"b\\c-long"}`)
	r := newRedactor(raw, []string{"server"})
	got := r.clean(`dial 127.0.0.1:53: key c2VjcmV0IGtleSB2YWx1ZQ== for acme, deep-secret-1, "a\"b\\c-long", a"b\c-long, rfc2136`)
	for _, secret := range []string{"c2VjcmV0IGtleSB2YWx1ZQ==", "acme", "deep-secret-1", `a"b\c-long`, `a\"b\\c-long`} {
		if strings.Contains(got, secret) {
			t.Errorf("%q left in %q", secret, got)
		}
	}
	// The public field and the module's name stay readable.
	if !strings.Contains(got, "127.0.0.1:53") || !strings.HasSuffix(got, "rfc2136") {
		t.Errorf("public words lost: %q", got)
	}
}

func TestClassify(t *testing.T) {
	for msg, want := range map[string]errKind{
		`dns response error code "NOTAUTH" (9)`:             kindAuth,
		"dns: bad signature":                                kindAuth,
		"HTTP 403 Forbidden":                                kindAuth,
		`dns response error code "REFUSED" (5)`:             kindRefused,
		`dns response error code "NOTZONE" (10)`:            kindZone,
		"dial tcp 127.0.0.1:1: connect: connection refused": kindNetwork,
		"something else":                                    kindOther,
	} {
		if got := classify(errors.New(msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}

func TestDelegation(t *testing.T) {
	server := startDNS(t)
	zoneMu.Lock()
	zoneCNAME["_acme-challenge.www.host.test."] = "_panel-check.example.test."
	zoneMu.Unlock()
	t.Cleanup(func() { zoneMu.Lock(); clear(zoneCNAME); zoneMu.Unlock() })
	_, res, raw := check(t, map[string]any{}, "5s", server, "_acme-challenge.www.host.test.")
	if !res.OK || stepNames(res) != "authenticate:ok write:ok visible:ok delegation:ok remove:ok" {
		t.Fatalf("steps: %s", raw)
	}
	if res.Steps[3].Detail != "_acme-challenge.www.host.test. is a CNAME to _panel-check.example.test. at "+server {
		t.Errorf("detail: %q", res.Steps[3].Detail)
	}
	// No CNAME there: the words say which record to create.
	_, res, raw = check(t, map[string]any{}, "5s", server, "_acme-challenge.other.host.test.")
	if res.OK || stepNames(res) != "authenticate:ok write:ok visible:ok delegation:FAIL remove:ok" {
		t.Fatalf("steps: %s", raw)
	}
	want := "create the record _acme-challenge.other.host.test. CNAME _panel-check.example.test. in the zone that holds other.host.test."
	if !strings.HasPrefix(res.Steps[3].Detail, "delegation not in place: "+server+": no CNAME at _acme-challenge.other.host.test.") || !strings.HasSuffix(res.Steps[3].Detail, want) {
		t.Errorf("detail: %q", res.Steps[3].Detail)
	}
}
