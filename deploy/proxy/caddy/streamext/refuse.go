package streamext

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(&Refuse{})
}

// RefuseReasons are the steps of a stream's chain that can refuse a connection
// (docs/streams.md, "The chain of a connection"); the panel's log view reads them.
var RefuseReasons = []string{"lan_only", "access_list", "banned", "engine_down"}

// Refuse ends a stream connection that a guard of the stream refused, before
// any byte reaches the upstream, and logs one line saying which stream and why.
// caddy-l4 has a "close" handler, but it logs nothing: an operator could not
// tell a ban from an access-list rule, nor a refusal from an upstream that hung up.
type Refuse struct {
	// StreamID is the panel's id of the stream, so the line names it.
	StreamID int64 `json:"stream_id"`
	// Reason is the step that refused: one of RefuseReasons.
	Reason string `json:"reason"`

	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*Refuse) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.panel_refuse",
		New: func() caddy.Module { return new(Refuse) },
	}
}

// Provision takes the module's logger (its lines carry logger "layer4.handlers.panel_refuse").
func (h *Refuse) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger(h)
	return nil
}

// Validate refuses a configuration the panel would not write, so a typo cannot
// log a reason the log view does not know.
func (h *Refuse) Validate() error {
	if h.StreamID <= 0 {
		return fmt.Errorf("panel_refuse: stream_id must be the stream's id (a positive integer), got %d", h.StreamID)
	}
	for _, r := range RefuseReasons {
		if h.Reason == r {
			return nil
		}
	}
	return fmt.Errorf("panel_refuse: reason %q is not one of %v", h.Reason, RefuseReasons)
}

// Handle logs the refusal and returns without calling next: the route is then
// terminal, and the layer-4 server closes the connection when the chain returns.
// It does not close the connection itself: a UDP "connection" is the server's
// per-source state, and closing it twice would notify the server loop twice.
// The remote address is the connection's, after any PROXY protocol header read
// before this route (the handler sees the wrapped connection).
func (h *Refuse) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	h.logger.Info("connection refused",
		zap.Int64("stream_id", h.StreamID),
		zap.String("reason", h.Reason),
		zap.String("remote", cx.RemoteAddr().String()),
		zap.String("local", cx.LocalAddr().String()),
	)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner  = (*Refuse)(nil)
	_ caddy.Validator    = (*Refuse)(nil)
	_ layer4.NextHandler = (*Refuse)(nil)
)
