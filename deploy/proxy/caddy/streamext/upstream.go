package streamext

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/mholt/caddy-l4/modules/l4proxy"
)

func init() {
	caddy.RegisterModule(&RecordUpstream{})
}

// upstreamVar is the connection variable where RecordUpstream leaves the upstream it
// chose last; ConnLog reads it when the connection ends.
const upstreamVar = "panel_upstream"

// RecordUpstream is a selection policy of the layer-4 proxy that delegates the choice to
// the stream's own policy (round robin, least connections...) and notes the choice on the
// connection, so the connection's log line can name its upstream (docs/streams.md,
// "Connection rows"). caddy-l4 v0.1.2 tells no handler which upstream it dialled: it
// names it only in a debug line. The selection is the one place of the proxy that
// receives the connection and returns the upstream, and the proxy dials every upstream it
// selects, right after selecting it: a retry after a refused dial selects again, so the
// last choice is the upstream that carried the connection, or, when every try failed,
// the last one tried. The note lives on the connection itself, so concurrent
// connections never see each other's.
type RecordUpstream struct {
	// The policy that chooses, as caddy-l4 takes it: {"policy": "round_robin"}.
	SelectionRaw json.RawMessage `json:"selection,omitempty" caddy:"namespace=layer4.proxy.selection_policies inline_key=policy"`

	selection l4proxy.Selector
}

// CaddyModule returns the Caddy module information.
func (*RecordUpstream) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.proxy.selection_policies.panel_record_upstream",
		New: func() caddy.Module { return new(RecordUpstream) },
	}
}

// Provision loads the policy that chooses.
func (s *RecordUpstream) Provision(ctx caddy.Context) error {
	if s.SelectionRaw == nil {
		return fmt.Errorf("panel_record_upstream: selection is required (the policy that chooses, e.g. {\"policy\": \"round_robin\"})")
	}
	mod, err := ctx.LoadModule(s, "SelectionRaw")
	if err != nil {
		return fmt.Errorf("panel_record_upstream: loading the selection policy: %v", err)
	}
	sel, ok := mod.(l4proxy.Selector)
	if !ok {
		return fmt.Errorf("panel_record_upstream: module %T is not a selection policy", mod)
	}
	s.selection = sel
	return nil
}

// Select asks the stream's policy and notes its answer on the connection. No answer (every
// upstream down) leaves the previous note: the proxy dialled nothing new.
func (s *RecordUpstream) Select(pool l4proxy.UpstreamPool, cx *layer4.Connection) *l4proxy.Upstream {
	u := s.selection.Select(pool, cx)
	if u != nil && cx != nil {
		cx.SetVar(upstreamVar, upstreamAddress(u))
	}
	return u
}

// upstreamAddress is the upstream as the panel names a target, host:port, without the
// network caddy-l4 writes before it ("tcp/10.0.0.5:25565" -> "10.0.0.5:25565").
func upstreamAddress(u *l4proxy.Upstream) string {
	addrs := make([]string, 0, len(u.Dial))
	for _, d := range u.Dial {
		_, host, port, err := caddy.SplitNetworkAddress(d)
		if err != nil || port == "" {
			addrs = append(addrs, d)
			continue
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	return strings.Join(addrs, ",")
}

// recordedUpstream is the note RecordUpstream left on the connection; "" when none.
func recordedUpstream(cx *layer4.Connection) string {
	s, _ := cx.GetVar(upstreamVar).(string)
	return s
}

// Interface guards
var (
	_ caddy.Provisioner = (*RecordUpstream)(nil)
	_ l4proxy.Selector  = (*RecordUpstream)(nil)
)
