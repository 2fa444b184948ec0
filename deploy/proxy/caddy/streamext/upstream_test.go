package streamext

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/mholt/caddy-l4/modules/l4proxy"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// namedUpstream listens on loopback and writes its own address on each connection, then
// waits for the client to hang up: the client learns which upstream carried it.
func namedUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = fmt.Fprintf(c, "%s\n", addr)
				_, _ = c.Read(make([]byte, 1))
			}()
		}
	}()
	return addr
}

// refusingAddress is a loopback port nothing listens on: a dial to it is refused.
func refusingAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// realProxy provisions caddy-l4's own proxy handler, as the panel writes it
// (server/utils/proxy/build/streams.ts): the stream's policy wrapped in panel_record_upstream.
func realProxy(t *testing.T, policy string, targets []string, tryDuration string) *l4proxy.Handler {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	ups := make([]map[string]any, 0, len(targets))
	for _, a := range targets {
		ups = append(ups, map[string]any{"dial": []string{"tcp/" + a}})
	}
	lb := map[string]any{"selection": map[string]any{"policy": "panel_record_upstream", "selection": map[string]any{"policy": policy}}}
	if tryDuration != "" {
		lb["try_duration"], lb["try_interval"] = tryDuration, "10ms"
	}
	raw, _ := json.Marshal(map[string]any{"upstreams": ups, "load_balancing": lb})
	mod, err := ctx.LoadModuleByID("layer4.handlers.proxy", raw)
	if err != nil {
		t.Fatalf("provision the proxy: %v", err)
	}
	return mod.(*l4proxy.Handler)
}

// connect runs one connection through ConnLog and the proxy, as a stream's route does, and
// returns what the client received (the upstream's address, or "" when none answered).
func connect(h *ConnLog, proxy *l4proxy.Handler) string {
	server, client := net.Pipe()
	cx := layer4.WrapConnection(server, nil, zap.NewNop())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.Handle(cx, layer4.HandlerFunc(func(c *layer4.Connection) error { return proxy.Handle(c, nil) }))
		_ = server.Close()
	}()
	line, _ := bufio.NewReader(client).ReadString('\n')
	_ = client.Close()
	<-done
	return strings.TrimSpace(line)
}

func upstreamOf(t *testing.T, e observer.LoggedEntry) string {
	t.Helper()
	if e.Message != "connection closed" {
		t.Fatalf("line %q", e.Message)
	}
	s, _ := e.ContextMap()["upstream"].(string)
	return s
}

// Round robin over two targets: each connection's line names the target that answered it.
func TestConnLogNamesTheUpstreamOfEachConnection(t *testing.T) {
	a, b := namedUpstream(t), namedUpstream(t)
	proxy := realProxy(t, "round_robin", []string{a, b}, "")
	core, lines := observer.New(zapcore.InfoLevel)
	h := &ConnLog{StreamID: 1, logger: zap.New(core)}
	got := []string{connect(h, proxy), connect(h, proxy)}
	if got[0] == got[1] || (got[0] != a && got[0] != b) || (got[1] != a && got[1] != b) {
		t.Fatalf("round robin answered %v, want %s and %s", got, a, b)
	}
	for i, e := range lines.All() {
		if up := upstreamOf(t, e); up != got[i] {
			t.Fatalf("connection %d: line names %q, the client was answered by %q", i, up, got[i])
		}
	}
}

// A refused first target, then a live one: the line names the live one, which carried it.
func TestConnLogNamesTheUpstreamThatCarriedARetriedConnection(t *testing.T) {
	dead, live := refusingAddress(t), namedUpstream(t)
	// Round robin alternates, so one of two connections dials the dead target first and is
	// retried on the live one (caddy-l4's "first" would pick the dead one on every try:
	// without a passive health check nothing takes it out).
	proxy := realProxy(t, "round_robin", []string{dead, live}, "2s")
	core, lines := observer.New(zapcore.InfoLevel)
	h := &ConnLog{StreamID: 1, logger: zap.New(core)}
	for i := 0; i < 2; i++ {
		if got := connect(h, proxy); got != live {
			t.Fatalf("connection %d answered by %q, want %s", i, got, live)
		}
	}
	for _, e := range lines.All() {
		if up, reason := upstreamOf(t, e), e.ContextMap()["reason"]; up != live || reason != "closed" {
			t.Fatalf("line names %q (%v), want %s (closed)", up, reason, live)
		}
	}
}

// No target answers: the line names the last one tried, and the reason is its dial error.
func TestConnLogNamesTheLastUpstreamTriedWhenNoneAnswers(t *testing.T) {
	a, b := refusingAddress(t), refusingAddress(t)
	proxy := realProxy(t, "round_robin", []string{a, b}, "100ms")
	core, lines := observer.New(zapcore.InfoLevel)
	h := &ConnLog{StreamID: 1, logger: zap.New(core)}
	if got := connect(h, proxy); got != "" {
		t.Fatalf("answered by %q", got)
	}
	e := lines.All()[0]
	up, reason := upstreamOf(t, e), fmt.Sprint(e.ContextMap()["reason"])
	if (up != a && up != b) || !strings.Contains(reason, up) || !strings.Contains(reason, "connection refused") {
		t.Fatalf("line names %q with reason %q", up, reason)
	}
}

// Many connections at once through one proxy: each line names its own connection's upstream.
func TestConnLogUpstreamUnderConcurrency(t *testing.T) {
	targets := []string{namedUpstream(t), namedUpstream(t), namedUpstream(t)}
	proxy := realProxy(t, "round_robin", targets, "")
	core, lines := observer.New(zapcore.InfoLevel)
	const n = 30
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// The stream id tells the lines apart (the pipes have no addresses).
			got[i] = connect(&ConnLog{StreamID: i + 1, logger: zap.New(core)}, proxy)
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, e := range lines.All() {
		i := int(e.ContextMap()["stream_id"].(int64)) - 1
		if up := upstreamOf(t, e); up != got[i] || up == "" {
			t.Fatalf("connection %d: line names %q, answered by %q", i, up, got[i])
		}
		seen[got[i]] = true
	}
	if len(lines.All()) != n || len(seen) != len(targets) {
		t.Fatalf("%d lines over %d upstreams", len(lines.All()), len(seen))
	}
}

// The upstream is named as the panel names a target: host:port, without caddy-l4's network.
func TestUpstreamAddressDropsTheNetwork(t *testing.T) {
	for dial, want := range map[string]string{
		"tcp/10.0.0.5:25565":   "10.0.0.5:25565",
		"udp/[2001:db8::1]:53": "[2001:db8::1]:53",
		"db.internal:5432":     "db.internal:5432",
	} {
		if got := upstreamAddress(&l4proxy.Upstream{Dial: []string{dial}}); got != want {
			t.Errorf("%s: %q, want %q", dial, got, want)
		}
	}
}

// Without the policy (a connection the proxy never selected for) the line has no upstream.
func TestConnLogWithoutAnUpstreamHasNoField(t *testing.T) {
	core, lines := observer.New(zapcore.InfoLevel)
	h := &ConnLog{StreamID: 3, logger: zap.New(core)}
	server, client := net.Pipe()
	defer client.Close()
	cx := layer4.WrapConnection(server, nil, zap.NewNop())
	_ = h.Handle(cx, layer4.HandlerFunc(func(*layer4.Connection) error { return fmt.Errorf("no upstreams available") }))
	if _, ok := lines.All()[0].ContextMap()["upstream"]; ok {
		t.Fatalf("an upstream named: %v", lines.All()[0].ContextMap())
	}
}
