package streamext

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeConn is a client connection whose addresses look like a real client's and
// that counts what the proxy reads from it and writes to it.
type fakeConn struct {
	net.Conn      // nil: a method not overridden here panics, so a new use shows up
	remote, local net.Addr
	read, written int
}

func (c *fakeConn) RemoteAddr() net.Addr            { return c.remote }
func (c *fakeConn) LocalAddr() net.Addr             { return c.local }
func (c *fakeConn) Read(p []byte) (int, error)      { c.read += len(p); return len(p), nil }
func (c *fakeConn) Write(p []byte) (int, error)     { c.written += len(p); return len(p), nil }
func (c *fakeConn) SetReadDeadline(time.Time) error { return nil }
func (c *fakeConn) Close() error                    { return nil }

func newConn() (*layer4.Connection, *fakeConn) {
	conn := &fakeConn{
		remote: &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 40123},
		local:  &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 2222},
	}
	return layer4.WrapConnection(conn, make([]byte, 0, 4096), zap.NewNop()), conn
}

// nextRecorder stands for the rest of the chain (the proxy to the upstream).
type nextRecorder struct{ called bool }

func (n *nextRecorder) Handle(*layer4.Connection) error { n.called = true; return nil }

func TestRefuseLogsOneLineAndStopsTheChain(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	h := &Refuse{StreamID: 12, Reason: "banned", logger: zap.New(core)}
	cx, _ := newConn()
	next := &nextRecorder{}

	if err := h.Handle(cx, next); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if next.called {
		t.Fatal("the refused connection went on to the next handler (the upstream)")
	}
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("want one log line, got %d", len(entries))
	}
	e := entries[0]
	if e.Level != zapcore.InfoLevel || e.Message != "connection refused" {
		t.Fatalf("want INFO %q, got %s %q", "connection refused", e.Level, e.Message)
	}
	want := map[string]any{"stream_id": int64(12), "reason": "banned", "remote": "203.0.113.7:40123", "local": "192.0.2.1:2222"}
	got := e.ContextMap()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s: want %v, got %v", k, v, got[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("want exactly the fields %v, got %v", want, got)
	}
}

// Through caddy-l4's own route list, as the proxy runs it: the refusal route is
// terminal, so neither a later route nor the end of the list sees the connection,
// and nothing is read from or written to the client.
func TestRefuseRouteIsTerminal(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	raw := `[
		{"handle": [{"handler": "panel_refuse", "stream_id": 3, "reason": "lan_only"}]},
		{"handle": [{"handler": "panel_refuse", "stream_id": 3, "reason": "banned"}]}
	]`
	var routes layer4.RouteList
	if err := json.Unmarshal([]byte(raw), &routes); err != nil {
		t.Fatal(err)
	}
	if err := routes.Provision(ctx); err != nil {
		t.Fatalf("provision: %v", err)
	}
	next := &nextRecorder{}
	cx, client := newConn()
	if err := routes.Compile(zap.NewNop(), time.Second, next).Handle(cx); err != nil {
		t.Fatalf("handle: %v", err)
	}
	if next.called {
		t.Fatal("a refused connection reached the end of the route list (the proxy)")
	}
	if client.written != 0 || client.read != 0 {
		t.Fatalf("the refusal wrote %d and read %d byte(s); want none", client.written, client.read)
	}
}

func TestRefuseValidate(t *testing.T) {
	for _, r := range RefuseReasons {
		if err := (&Refuse{StreamID: 1, Reason: r}).Validate(); err != nil {
			t.Errorf("reason %s: %v", r, err)
		}
	}
	for _, tc := range []struct {
		h    Refuse
		want string
	}{
		{Refuse{StreamID: 1, Reason: "nope"}, `reason "nope"`},
		{Refuse{StreamID: 1}, `reason ""`},
		{Refuse{StreamID: 0, Reason: "banned"}, "stream_id"},
	} {
		err := tc.h.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want an error naming %s, got %v", tc.h, tc.want, err)
		}
	}
}
