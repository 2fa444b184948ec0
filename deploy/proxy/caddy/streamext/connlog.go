package streamext

import (
	"net"
	"reflect"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(ConnLog{})
}

// ConnLog logs one line per stream connection when it ends (docs/streams.md,
// "Connection rows"): the panel ingests it as a `layer4` log row. It is placed
// first in the proxy route of a stream, so it sees the client address after a
// PROXY protocol header from a trusted proxy, and wraps the proxy handler. The line names
// the upstream when the proxy's selection policy is RecordUpstream (upstream.go).
type ConnLog struct {
	// The stream's id in the panel: the ingester names the stream by it.
	StreamID int `json:"stream_id,omitempty"`

	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (ConnLog) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.panel_conn_log",
		New: func() caddy.Module { return new(ConnLog) },
	}
}

// Provision sets up the handler.
func (h *ConnLog) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger(h)
	return nil
}

// Handle runs the rest of the route (the proxy) and logs the connection when it returns.
func (h *ConnLog) Handle(cx *layer4.Connection, next layer4.Handler) error {
	start := time.Now()
	// The addresses are read before the proxy runs: a closed connection may no longer know them.
	remote, local := addrString(cx.RemoteAddr()), addrString(cx.LocalAddr())
	err := next.Handle(cx)
	reason := "closed"
	if err != nil {
		reason = err.Error()
	}
	fields := []zap.Field{
		zap.Int("stream_id", h.StreamID),
		zap.String("remote", remote),
		zap.String("local", local),
	}
	if in, out, ok := byteCounts(cx); ok {
		fields = append(fields, zap.Uint64("bytes_in", in), zap.Uint64("bytes_out", out))
	}
	// The upstream the proxy chose last (upstream.go): the one that carried the connection,
	// or the last one tried when none answered. None when no upstream was available at all.
	if up := recordedUpstream(cx); up != "" {
		fields = append(fields, zap.String("upstream", up))
	}
	fields = append(fields, zap.Float64("duration", time.Since(start).Seconds()), zap.String("reason", reason))
	h.logger.Info("connection closed", fields...)
	return err
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// byteCounts reads what the connection counted: bytes read from the client (toward the
// upstream, with any bytes read while matching, which the proxy forwards too) and bytes
// written to it. caddy-l4 v0.1.2 keeps the counts unexported (it logs them only at
// debug level, "connection stats"); reading them by reflection is exact, where wrapping
// the connection would miss the prefetched bytes and lose a UDP stream's datagram
// boundaries. If a later caddy-l4 renames them, the line has no counts (ok false)
// rather than wrong ones; the unit test fails first.
func byteCounts(cx *layer4.Connection) (in, out uint64, ok bool) {
	v := reflect.ValueOf(cx).Elem()
	r, w := v.FieldByName("bytesRead"), v.FieldByName("bytesWritten")
	if !r.IsValid() || !w.IsValid() || r.Kind() != reflect.Uint64 || w.Kind() != reflect.Uint64 {
		return 0, 0, false
	}
	return r.Uint(), w.Uint(), true
}

// Interface guards
var (
	_ caddy.Provisioner  = (*ConnLog)(nil)
	_ layer4.NextHandler = (*ConnLog)(nil)
)
