package wafext

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	// The handler panel_waf shares, registered as in the production binary (main.go).
	_ "github.com/corazawaf/coraza-caddy/v2"
)

const denyAdmin = "SecRuleEngine On\nSecRule REQUEST_URI \"@contains /admin\" \"id:1,phase:1,deny,status:403\""
const detectAdmin = "SecRuleEngine DetectionOnly\nSecRule REQUEST_URI \"@contains /admin\" \"id:1,phase:1,deny,status:403\""

func provisioned(t *testing.T, ctx caddy.Context, directives string) *SharedWAF {
	t.Helper()
	m := &SharedWAF{Directives: directives}
	if err := m.Provision(ctx); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return m
}

func status(t *testing.T, m *SharedWAF, path string) int {
	t.Helper()
	w := httptest.NewRecorder()
	ok := caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error { w.WriteHeader(200); return nil })
	r := httptest.NewRequest("GET", path, nil)
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	if err := m.ServeHTTP(w, r, ok); err != nil {
		if he, isHandlerErr := err.(caddyhttp.HandlerError); isHandlerErr {
			return he.StatusCode
		}
		t.Fatalf("serve: %v", err)
	}
	return w.Code
}

// The same text shares one compiled WAF; another text gets its own; the instance lives
// while any handler holds it, as across a reload (new provisioned before old cleaned up).
func TestSharedWAFReferenceCounts(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	before := sharedInstances()
	a := provisioned(t, ctx, denyAdmin)
	b := provisioned(t, ctx, denyAdmin)
	if a.next != b.next || sharedInstances() != before+1 {
		t.Fatalf("same directives: want one shared instance, have %d", sharedInstances()-before)
	}
	c := provisioned(t, ctx, detectAdmin)
	if c.next == a.next || sharedInstances() != before+2 {
		t.Fatalf("other directives: want an instance of their own")
	}
	// Sharing leaks no mode: blocking refuses, detection lets the same request through.
	if s := status(t, a, "/admin"); s != 403 {
		t.Fatalf("blocking handler: status %d, want 403", s)
	}
	if s := status(t, c, "/admin"); s != 200 {
		t.Fatalf("detection handler: status %d, want 200", s)
	}
	// A reload: the new configuration's handler provisions first and finds the instance.
	shared := a.next
	_ = a.Cleanup()
	_ = b.Cleanup()
	if sharedInstances() != before+1 {
		t.Fatalf("released by every handler: want the instance dropped")
	}
	a2 := provisioned(t, ctx, denyAdmin)
	if a2.next == shared {
		t.Fatalf("a dropped instance must not be reused")
	}
	d := provisioned(t, ctx, detectAdmin)
	_ = c.Cleanup()
	if d.next == nil || sharedInstances() != before+2 {
		t.Fatalf("cleanup of the old handler must keep the instance the new one holds")
	}
	_ = a2.Cleanup()
	_ = d.Cleanup()
	_ = d.Cleanup() // a second cleanup releases nothing more
	if sharedInstances() != before {
		t.Fatalf("instances left: %d", sharedInstances()-before)
	}
}

// Caddy calls Cleanup after a failed Provision: no reference was taken, none is released.
func TestSharedWAFFailedProvision(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	before := sharedInstances()
	m := &SharedWAF{Directives: "SecRule NOT_A_VARIABLE"}
	if err := m.Provision(ctx); err == nil {
		t.Fatalf("bad directives must fail")
	}
	_ = m.Cleanup()
	if sharedInstances() != before {
		t.Fatalf("a failed provision must leave nothing")
	}
}

// Hosts that differ only in exclusions share one text whose exclusions are guarded by
// each host's mark: one compiled WAF, each host's exclusion applying to its requests
// only, a client's own mark header ignored, and the upstream never seeing the mark.
func TestSharedWAFHostMarks(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	text := "SecRuleEngine On\n" +
		"SecRule REQUEST_HEADERS:" + HostMarkHeader + " \"@streq 7\" \"id:10,phase:1,pass,nolog,ctl:ruleRemoveById=1\"\n" +
		"SecRule REQUEST_URI \"@contains /admin\" \"id:1,phase:1,deny,status:403\""
	before := sharedInstances()
	excluded := &SharedWAF{Directives: text, HostMark: "7"}
	plain := &SharedWAF{Directives: text, HostMark: "8"}
	for _, m := range []*SharedWAF{excluded, plain} {
		if err := m.Provision(ctx); err != nil {
			t.Fatalf("provision: %v", err)
		}
		defer m.Cleanup()
	}
	if excluded.next != plain.next || sharedInstances() != before+1 {
		t.Fatalf("same text, other marks: want one shared instance, have %d", sharedInstances()-before)
	}
	serve := func(m *SharedWAF, clientMark string) (int, string) {
		w := httptest.NewRecorder()
		seen := "unset"
		upstream := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			if v, ok := r.Header[http.CanonicalHeaderKey(HostMarkHeader)]; ok {
				seen = v[0]
			}
			w.WriteHeader(200)
			return nil
		})
		r := httptest.NewRequest("GET", "/admin", nil)
		if clientMark != "" {
			r.Header.Set(HostMarkHeader, clientMark)
		}
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
		if err := m.ServeHTTP(w, r, upstream); err != nil {
			if he, ok := err.(caddyhttp.HandlerError); ok {
				return he.StatusCode, seen
			}
			t.Fatalf("serve: %v", err)
		}
		return w.Code, seen
	}
	if s, seen := serve(excluded, ""); s != 200 || seen != "unset" {
		t.Fatalf("the excluded host: status %d (want 200), upstream saw the mark %q", s, seen)
	}
	if s, _ := serve(plain, ""); s != 403 {
		t.Fatalf("the host without the exclusion: status %d, want 403", s)
	}
	if s, _ := serve(plain, "7"); s != 403 {
		t.Fatalf("a client sending another host's mark: status %d, want 403", s)
	}
}
