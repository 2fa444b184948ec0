package storageext

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
)

// These tests need a Redis server: tests/integration/proxy.storage-redis.test.ts runs
// them against a real redis-server (PANEL_TEST_REDIS_ADDR, PANEL_TEST_REDIS_PASSWORD).
// The image build has none, so there they are skipped. They use database 1, so that
// what the integration test's Caddy nodes write (database 0) is theirs alone.
func redisStoreForTest(t *testing.T, prefix string) *store {
	t.Helper()
	addr := os.Getenv("PANEL_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("PANEL_TEST_REDIS_ADDR is not set (tests/integration/proxy.storage-redis.test.ts sets it)")
	}
	cfg := RedisStorage{Addresses: []string{addr}, Password: os.Getenv("PANEL_TEST_REDIS_PASSWORD"), KeyPrefix: prefix, EncryptionKey: "conformance key", DB: 1}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := cfg.newStore(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// The Redis storage answers as certmagic's file storage does, operation by operation.
func TestRedisAnswersLikeFileStorage(t *testing.T) {
	ctx := context.Background()
	prefix := "conformance-" + randomToken()[:8]
	r := redisStoreForTest(t, prefix)
	f := &certmagic.FileStorage{Path: t.TempDir()}
	both := []certmagic.Storage{f, r}
	for _, st := range both {
		for _, k := range []string{"certificates/acme/a.test/a.test.crt", "certificates/acme/a.test/a.test.key", "certificates/local/b.test/b.test.crt", "acme/x/users/u.json", "top.json"} {
			if err := st.Store(ctx, k, []byte("value of "+k)); err != nil {
				t.Fatalf("%T store %s: %v", st, k, err)
			}
		}
	}
	pemCert := selfSigned(t, "*.w.test", "Conformance CA", time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	for _, st := range both {
		if err := st.Store(ctx, "certificates/acme/wildcard_.w.test/wildcard_.w.test.crt", pemCert); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what string, fn func(st certmagic.Storage) any) {
		t.Helper()
		want, got := fn(f), fn(r)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: file storage %v, redis %v", what, want, got)
		}
	}
	list := func(dir string, rec bool) func(st certmagic.Storage) any {
		return func(st certmagic.Storage) any {
			keys, err := st.List(ctx, dir, rec)
			if err != nil {
				return errors.Is(err, fs.ErrNotExist)
			}
			return keys
		}
	}
	same("list certificates", list("certificates", false))
	same("walk certificates", list("certificates", true))
	same("list certificates/acme/a.test", list("certificates/acme/a.test", false))
	same("list a missing folder", list("nothing/here", false))
	same("list a file", list("top.json", false))
	same("certificates", func(st certmagic.Storage) any { c, err := ListCertificates(ctx, st); return []any{c, err} })
	if c, _ := ListCertificates(ctx, r); len(c) != 1 || c[0].Name != "*.w.test" || c[0].NotAfter != "2031-05-06T07:08:09Z" {
		t.Errorf("certificates through Redis: %+v", c)
	}
	same("load", func(st certmagic.Storage) any {
		v, err := st.Load(ctx, "certificates/acme/a.test/a.test.key")
		return string(v) + errString(err)
	})
	same("load missing", func(st certmagic.Storage) any {
		_, err := st.Load(ctx, "certificates/none.crt")
		return errors.Is(err, fs.ErrNotExist)
	})
	same("stat missing", func(st certmagic.Storage) any {
		_, err := st.Stat(ctx, "certificates/none.crt")
		return errors.Is(err, fs.ErrNotExist)
	})
	same("stat file", func(st certmagic.Storage) any {
		i, err := st.Stat(ctx, "top.json")
		return []any{i.Key, i.IsTerminal, i.Size, err == nil, time.Since(i.Modified) < time.Hour}
	})
	same("stat folder", func(st certmagic.Storage) any {
		i, err := st.Stat(ctx, "certificates/acme")
		return []any{i.Key, i.IsTerminal, err == nil}
	})
	same("exists", func(st certmagic.Storage) any {
		return []bool{st.Exists(ctx, "certificates"), st.Exists(ctx, "certificates/acme/a.test/a.test.crt"), st.Exists(ctx, "certificates/ac"), st.Exists(ctx, "nothing")}
	})
	for _, st := range both {
		if err := st.Delete(ctx, "certificates/acme"); err != nil {
			t.Fatalf("%T delete folder: %v", st, err)
		}
		if err := st.Delete(ctx, "never/there"); err != nil {
			t.Fatalf("%T delete missing: %v", st, err)
		}
		if err := st.Delete(ctx, "top.json"); err != nil {
			t.Fatalf("%T delete file: %v", st, err)
		}
	}
	same("walk after deletes", list("", true))
	// Sealed at rest: the raw value is not the plain one.
	raw, err := r.client.HGet(ctx, r.rkey("acme/x/users/u.json"), fieldValue).Bytes()
	if err != nil || strings.Contains(string(raw), "value of") {
		t.Fatalf("raw value %q (%v)", raw, err)
	}
	_ = r.Delete(ctx, "acme")
	_ = r.Delete(ctx, "certificates")
}

func errString(err error) string {
	if err != nil {
		return " error"
	}
	return ""
}

func TestRedisLocks(t *testing.T) {
	ctx := context.Background()
	prefix := "locks-" + randomToken()[:8]
	one := redisStoreForTest(t, prefix)
	two := redisStoreForTest(t, prefix) // another node: its own client and its own locks

	if ok, err := one.TryLock(ctx, "issue_cert_*.a.test"); !ok || err != nil {
		t.Fatalf("free lock: %v %v", ok, err)
	}
	if ok, err := two.TryLock(ctx, "issue_cert_*.a.test"); ok || err != nil {
		t.Fatalf("held lock taken by another node: %v %v", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	err := two.Lock(short, "issue_cert_*.a.test")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a held lock must wait until the context ends: %v", err)
	}
	if err := two.Unlock(ctx, "issue_cert_*.a.test"); err == nil {
		t.Fatal("another node released a lock it does not hold")
	}
	if v, _ := one.client.Get(ctx, prefix+"/locks/issue_cert_wildcard_.a.test").Result(); v == "" {
		t.Fatal("the lock is not where the docs say")
	}
	if err := one.Unlock(ctx, "issue_cert_*.a.test"); err != nil {
		t.Fatalf("holder's unlock: %v", err)
	}
	if err := two.Lock(ctx, "issue_cert_*.a.test"); err != nil {
		t.Fatalf("released lock: %v", err)
	}
	if err := two.Unlock(ctx, "issue_cert_*.a.test"); err != nil {
		t.Fatal(err)
	}

	// A holder that dies stops refreshing: its lock expires and the other node goes on.
	one.lockTTL = 600 * time.Millisecond
	if ok, _ := one.TryLock(ctx, "renew_cert_b.test"); !ok {
		t.Fatal("free lock")
	}
	one.locksMu.Lock()
	one.locks["renew_cert_b.test"].stop() // the holder is gone: no more refreshes, no unlock
	one.locksMu.Unlock()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := two.Lock(wait, "renew_cert_b.test"); err != nil {
		t.Fatalf("a dead holder's lock did not expire: %v", err)
	}
	if err := one.Unlock(ctx, "renew_cert_b.test"); err == nil || !strings.Contains(err.Error(), "no longer this node's") {
		t.Fatalf("the dead holder's unlock must not release the new holder's lock: %v", err)
	}
	if v, _ := two.client.Exists(ctx, prefix+"/locks/renew_cert_b.test").Result(); v != 1 {
		t.Fatal("the new holder's lock is gone")
	}
	_ = two.Unlock(ctx, "renew_cert_b.test")
}
