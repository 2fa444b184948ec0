package streamext

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	_ "github.com/mholt/caddy-l4/modules/l4subroute" // the warm-up route nests its refusal in a subroute
	"go.uber.org/zap"
)

func TestBeforeMatchesUntilTheBound(t *testing.T) {
	cx, _ := newConn()
	accepted := time.UnixMilli(1_800_000_000_000)
	cx.Replacer().Set(layer4.ConnWrapTimeReplKey, accepted)
	for _, tc := range []struct {
		until int64
		want  bool
	}{
		{accepted.UnixMilli() + 1, true},
		// The bound itself is outside the window, as the hosts' `now < until` is.
		{accepted.UnixMilli(), false},
		{accepted.UnixMilli() - 60_000, false},
	} {
		m := &MatchBefore{UntilUnixMs: tc.until}
		if err := m.Provision(caddy.Context{}); err != nil {
			t.Fatal(err)
		}
		got, err := m.Match(cx)
		if err != nil || got != tc.want {
			t.Errorf("until %d: want %v, got %v (%v)", tc.until, tc.want, got, err)
		}
	}
	// Without the stamp, the clock decides.
	fresh, _ := newConn()
	m := &MatchBefore{UntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}
	_ = m.Provision(caddy.Context{})
	if got, _ := m.Match(fresh); !got {
		t.Error("a connection opened now did not match a bound a minute ahead")
	}
}

// The connection is judged by when it was accepted, not by when matching ran: one
// accepted inside the window and matched after it is still refused.
func TestBeforeUsesTheAcceptTime(t *testing.T) {
	cx, _ := newConn()
	accepted := time.Now().Add(-time.Hour)
	cx.Replacer().Set(layer4.ConnWrapTimeReplKey, accepted)
	m := &MatchBefore{UntilUnixMs: accepted.Add(time.Second).UnixMilli()}
	if err := m.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Match(cx); !got {
		t.Fatal("a connection accepted inside the window did not match")
	}
}

func TestBeforeValidate(t *testing.T) {
	if err := (&MatchBefore{UntilUnixMs: time.Now().UnixMilli()}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, -1} {
		err := (&MatchBefore{UntilUnixMs: v}).Validate()
		if err == nil || !strings.Contains(err.Error(), "until_unix_ms") {
			t.Errorf("%d: want an error naming until_unix_ms, got %v", v, err)
		}
	}
}

// The warm-up route as the panel writes it (stream-guards.ts), through caddy-l4's
// own route list: inside the window a listed source is refused and the others go on
// to the next route (the proxy); after it, everyone goes on.
func TestBeforeWarmupRoute(t *testing.T) {
	// The client of newConn is 203.0.113.7.
	route := func(until time.Time, sources, whitelist string) layer4.RouteList {
		raw := fmt.Sprintf(`[{
			"match": [{"panel_before": {"until_unix_ms": %d}}],
			"handle": [{"handler": "subroute", "routes": [
				{"match": [{"remote_ip": {"ranges": [%s]}, "not": [{"remote_ip": {"ranges": [%s]}}]}],
				 "handle": [{"handler": "panel_refuse", "stream_id": 5, "reason": "banned"}]}
			]}]
		}]`, until.UnixMilli(), sources, whitelist)
		var routes layer4.RouteList
		if err := json.Unmarshal([]byte(raw), &routes); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		t.Cleanup(cancel)
		if err := routes.Provision(ctx); err != nil {
			t.Fatalf("provision: %v", err)
		}
		return routes
	}
	passes := func(routes layer4.RouteList) bool {
		next := &nextRecorder{}
		cx, client := newConn()
		if err := routes.Compile(zap.NewNop(), time.Second, next).Handle(cx); err != nil {
			t.Fatalf("handle: %v", err)
		}
		if client.read != 0 || client.written != 0 {
			t.Fatalf("matching read %d and wrote %d byte(s); want none", client.read, client.written)
		}
		return next.called
	}
	soon, past := time.Now().Add(time.Minute), time.Now().Add(-time.Minute)
	const other = `"192.0.2.250"`
	if passes(route(soon, `"203.0.113.0/24"`, other)) {
		t.Error("a source banned at push time went on to the proxy inside the window")
	}
	if !passes(route(soon, `"192.0.2.9"`, other)) {
		t.Error("a source not banned was refused in the window")
	}
	if !passes(route(soon, `"203.0.113.7"`, `"203.0.113.0/24"`)) {
		t.Error("a whitelisted source was refused")
	}
	if !passes(route(past, `"203.0.113.7"`, other)) {
		t.Error("a banned source was refused after the window: the route outlived it")
	}
}
