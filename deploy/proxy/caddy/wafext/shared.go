package wafext

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// SharedWAF (http.handlers.panel_waf) is coraza-caddy's `waf` handler with its compiled
// WAF shared: every handler whose directives (and CRS flag) are the same text uses one
// compiled rule set, taken from a process-wide cache keyed by their hash. A full-CRS
// Coraza instance is ~55-60 MB resident and ~0.3 s to compile, so hosts with the same
// settings no longer pay for it each, and a reload re-parses nothing it already has:
// Caddy provisions the new configuration before it cleans up the old one, so the new
// handler finds the old one's instance while the old still holds a reference.
//
// Sharing cannot leak one host's settings to another: what a host may differ in (mode,
// thresholds, families, limits) is in its directive text, so a different host gets a
// different key and an instance of its own (docs/waf.md). Exclusions are the one
// exception: hosts that differ only in them share one text that carries every such
// host's exclusions, each guarded by the host's mark (HostMark), which this handler
// writes into the request header HostMarkHeader before the WAF sees the request
// (replacing whatever the client sent) and removes before the request goes on, so a
// client cannot take another host's exclusions and the upstream never sees the mark.
//
// The shared object is coraza-caddy's own handler, provisioned once: requests are
// handled by exactly the code of the `waf` handler (request, response, interruptions).
type SharedWAF struct {
	Directives   string `json:"directives,omitempty"`
	LoadOWASPCRS bool   `json:"load_owasp_crs,omitempty"`
	// HostMark: the value of HostMarkHeader for this host's requests ("" : none set).
	HostMark string `json:"host_mark,omitempty"`

	key  string
	next caddyhttp.MiddlewareHandler
}

type sharedEntry struct {
	handler caddyhttp.MiddlewareHandler
	refs    int
}

var (
	sharedMu  sync.Mutex
	sharedWAF = map[string]*sharedEntry{}
)

// HostMarkHeader carries a host's mark to the shared rules (SecRule REQUEST_HEADERS:X-Panel-Waf-Host).
const HostMarkHeader = "X-Panel-Waf-Host"

func init() {
	caddy.RegisterModule(SharedWAF{})
}

// CaddyModule returns the Caddy module information.
func (SharedWAF) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.panel_waf",
		New: func() caddy.Module { return new(SharedWAF) },
	}
}

func sharedKey(directives string, crs bool) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("crs=%t\n%s", crs, directives)))
	return hex.EncodeToString(sum[:])
}

// Provision takes the compiled WAF from the cache, or compiles it once (under the lock,
// so two handlers with the same text never compile it twice).
func (m *SharedWAF) Provision(ctx caddy.Context) error {
	key := sharedKey(m.Directives, m.LoadOWASPCRS)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if e, ok := sharedWAF[key]; ok {
		e.refs++
		m.key, m.next = key, e.handler
		return nil
	}
	handler, err := newCorazaHandler(ctx, m.Directives, m.LoadOWASPCRS)
	if err != nil {
		return err
	}
	sharedWAF[key] = &sharedEntry{handler: handler, refs: 1}
	// One line per compiled rule set: how many a configuration costs is read from the log.
	ctx.Logger().Info("compiled a shared WAF rule set", zap.String("key", key[:12]), zap.Int("instances", len(sharedWAF)))
	m.key, m.next = key, handler
	return nil
}

// newCorazaHandler provisions coraza-caddy's `waf` handler with these directives.
func newCorazaHandler(ctx caddy.Context, directives string, crs bool) (caddyhttp.MiddlewareHandler, error) {
	info, err := caddy.GetModule("http.handlers.waf")
	if err != nil {
		return nil, fmt.Errorf("panel_waf needs coraza-caddy's waf handler in the build: %w", err)
	}
	mod := info.New()
	raw, err := json.Marshal(map[string]any{"directives": directives, "load_owasp_crs": crs})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, mod); err != nil {
		return nil, err
	}
	prov, ok := mod.(caddy.Provisioner)
	if !ok {
		return nil, fmt.Errorf("coraza-caddy's waf handler is no longer a provisioner")
	}
	if err := prov.Provision(ctx); err != nil {
		return nil, err
	}
	handler, ok := mod.(caddyhttp.MiddlewareHandler)
	if !ok {
		return nil, fmt.Errorf("coraza-caddy's waf handler is no longer an HTTP handler")
	}
	return handler, nil
}

// Cleanup releases this handler's reference; the last one drops the instance. Caddy
// also calls it after a failed Provision, which took no reference (key empty).
func (m *SharedWAF) Cleanup() error {
	if m.key == "" {
		return nil
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if e, ok := sharedWAF[m.key]; ok {
		e.refs--
		if e.refs <= 0 {
			delete(sharedWAF, m.key)
		}
	}
	m.key, m.next = "", nil
	return nil
}

// ServeHTTP hands the request to the shared coraza-caddy handler, with this host's mark
// (or none) in HostMarkHeader while the WAF inspects it.
func (m *SharedWAF) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if m.HostMark != "" {
		r.Header.Set(HostMarkHeader, m.HostMark)
	} else {
		r.Header.Del(HostMarkHeader)
	}
	return m.next.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		r.Header.Del(HostMarkHeader)
		return next.ServeHTTP(w, r)
	}))
}

// sharedInstances: how many compiled WAFs the process holds (for the tests).
func sharedInstances() int {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return len(sharedWAF)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*SharedWAF)(nil)
	_ caddy.CleanerUpper          = (*SharedWAF)(nil)
	_ caddyhttp.MiddlewareHandler = (*SharedWAF)(nil)
)
