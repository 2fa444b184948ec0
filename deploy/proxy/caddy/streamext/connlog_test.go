package streamext

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A connection that carries bytes each way gives one INFO line "connection closed" with
// the stream, the addresses, the byte counts and "closed".
func TestConnLogCountsBytesEachWay(t *testing.T) {
	core, lines := observer.New(zapcore.DebugLevel)
	h := &ConnLog{StreamID: 7, logger: zap.New(core)}
	server, client := net.Pipe()
	defer client.Close()
	// 3 bytes handed in as already buffered: in Caddy the prefetch counted them when it read
	// them from the wire; handed in here they were never read, so only the 5 from the client count.
	cx := layer4.WrapConnection(server, []byte("abc"), zap.NewNop())
	go func() {
		_, _ = client.Write([]byte("hello"))
		buf := make([]byte, 4)
		_, _ = io.ReadFull(client, buf)
		_ = client.Close()
	}()
	next := layer4.HandlerFunc(func(c *layer4.Connection) error {
		buf := make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		_, err := c.Write([]byte("pong"))
		return err
	})
	if err := h.Handle(cx, next); err != nil {
		t.Fatalf("handle: %v", err)
	}
	all := lines.All()
	if len(all) != 1 {
		t.Fatalf("want one line, got %d", len(all))
	}
	e := all[0]
	if e.Message != "connection closed" || e.Level != zapcore.InfoLevel {
		t.Fatalf("line %q at %v", e.Message, e.Level)
	}
	f := e.ContextMap()
	if f["stream_id"] != int64(7) || f["reason"] != "closed" {
		t.Fatalf("fields %v", f)
	}
	if f["bytes_in"] != uint64(5) || f["bytes_out"] != uint64(4) {
		t.Fatalf("bytes in %v out %v", f["bytes_in"], f["bytes_out"])
	}
	if _, ok := f["duration"].(float64); !ok {
		t.Fatalf("no duration: %v", f)
	}
	if f["remote"] != "pipe" || f["local"] != "pipe" {
		t.Fatalf("addresses %v %v", f["remote"], f["local"])
	}
}

// The proxy's error (no upstream, a refused dial) is the close reason, and it is passed on.
func TestConnLogReasonIsTheProxyError(t *testing.T) {
	core, lines := observer.New(zapcore.DebugLevel)
	h := &ConnLog{StreamID: 2, logger: zap.New(core)}
	server, client := net.Pipe()
	defer client.Close()
	cx := layer4.WrapConnection(server, nil, zap.NewNop())
	want := errors.New("no upstreams available")
	err := h.Handle(cx, layer4.HandlerFunc(func(*layer4.Connection) error { return want }))
	if !errors.Is(err, want) {
		t.Fatalf("error not passed on: %v", err)
	}
	f := lines.All()[0].ContextMap()
	if f["reason"] != "no upstreams available" || f["bytes_in"] != uint64(0) {
		t.Fatalf("fields %v", f)
	}
}

// The counts come from caddy-l4's unexported fields: a caddy-l4 that renames them must fail here.
func TestByteCountsFindsTheFields(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	if _, _, ok := byteCounts(layer4.WrapConnection(server, nil, zap.NewNop())); !ok {
		t.Fatal("caddy-l4's Connection no longer has bytesRead/bytesWritten")
	}
}
