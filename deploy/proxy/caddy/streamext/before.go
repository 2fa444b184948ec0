package streamext

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
)

func init() {
	caddy.RegisterModule(&MatchBefore{})
}

// MatchBefore matches a connection opened before a point in time. It bounds the
// bouncer warm-up route of a stream (docs/streams.md, "Fail modes"): every push
// restarts the bouncer with an empty store, so the panel writes the sources banned
// at push time into the configuration, refused only until the new bouncer has
// loaded its decisions. The web hosts bound theirs with a CEL expression on
// {time.now.unix_ms}; caddy-l4 has no expression matcher, and its clock matcher
// reads the time of day (it would match again the next day), hence this one.
type MatchBefore struct {
	// UntilUnixMs is the end of the window, in milliseconds since the Unix epoch
	// (the panel's Date.now() plus the window): connections opened at or after it
	// do not match.
	UntilUnixMs int64 `json:"until_unix_ms"`

	until time.Time
}

// CaddyModule returns the Caddy module information.
func (*MatchBefore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.panel_before",
		New: func() caddy.Module { return new(MatchBefore) },
	}
}

// Provision converts the bound once, not on every connection.
func (m *MatchBefore) Provision(caddy.Context) error {
	m.until = time.UnixMilli(m.UntilUnixMs)
	return nil
}

// Validate refuses a missing bound: a zero would be a route that never matches,
// which says the panel wrote something it did not mean.
func (m *MatchBefore) Validate() error {
	if m.UntilUnixMs <= 0 {
		return fmt.Errorf("panel_before: until_unix_ms must be a time in milliseconds since the Unix epoch, got %d", m.UntilUnixMs)
	}
	return nil
}

// Match reports whether the connection was opened before the bound. The time is
// the one caddy-l4 stamped when it accepted the connection (l4.conn.wrap_time), so
// a connection is judged by when it arrived, not by how long matching took; the
// clock is read only when that stamp is missing. Nothing is read from the client.
func (m *MatchBefore) Match(cx *layer4.Connection) (bool, error) {
	t := time.Now()
	if v, ok := cx.Replacer().Get(layer4.ConnWrapTimeReplKey); ok {
		if at, ok := v.(time.Time); ok {
			t = at
		}
	}
	return t.Before(m.until), nil
}

// Interface guards
var (
	_ caddy.Provisioner  = (*MatchBefore)(nil)
	_ caddy.Validator    = (*MatchBefore)(nil)
	_ layer4.ConnMatcher = (*MatchBefore)(nil)
)
