package storageext

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
)

func TestValidateRefusesWithWordsAndNoSecret(t *testing.T) {
	const pw, key = "hunter2-very-secret", "enc-key-very-secret"
	cases := []struct {
		cfg  RedisStorage
		want string
	}{
		{RedisStorage{Mode: "sentinel", Addresses: []string{"10.0.0.5:26379"}, Password: pw}, "storage panel_redis: sentinel mode needs sentinel_master"},
		{RedisStorage{Mode: "ring", Addresses: []string{"10.0.0.5:6379"}}, "mode must be single, sentinel or cluster"},
		{RedisStorage{Password: pw}, "addresses must name at least one"},
		{RedisStorage{Addresses: []string{"10.0.0.5"}, Password: pw}, `address "10.0.0.5" must be host:port`},
		{RedisStorage{Addresses: []string{"10.0.0.5:70000"}}, "must be host:port"},
		{RedisStorage{Addresses: []string{"a:1", "b:2"}, EncryptionKey: key}, "single mode takes one address"},
		{RedisStorage{Mode: "cluster", Addresses: []string{"a:1"}, DB: 2}, "db must be 0 in cluster mode"},
		{RedisStorage{Addresses: []string{"a:1"}, DB: 16}, "db must be from 0 to 15"},
		{RedisStorage{Addresses: []string{"a:1"}, KeyPrefix: "a/b"}, "key_prefix must be"},
		{RedisStorage{Addresses: []string{"a:1"}, SentinelMaster: "m"}, "sentinel_master is for sentinel mode only"},
		{RedisStorage{Addresses: []string{"a:1"}, TLS: &TLS{Enabled: true, CAPEM: "not a pem"}}, "tls.ca_pem holds no PEM certificate"},
		{RedisStorage{Addresses: []string{"a:1"}, TLS: &TLS{ServerName: "r.example"}}, "need tls.enabled true"},
	}
	for _, c := range cases {
		err := c.cfg.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg.Mode, err, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "storage panel_redis: ") || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), key) {
			t.Errorf("error %q lacks the module's name or quotes a secret", err)
		}
	}
	ok := RedisStorage{Mode: "sentinel", Addresses: []string{"10.0.0.5:26379", "[2001:db8::5]:26379"}, SentinelMaster: "mymaster"}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid sentinel configuration refused: %v", err)
	}
	def := RedisStorage{Addresses: []string{"10.0.0.5:6379"}}
	if err := def.validate(); err != nil || def.Mode != "single" || def.KeyPrefix != "caddy" {
		t.Fatalf("defaults: %v %q %q", err, def.Mode, def.KeyPrefix)
	}
	if got := def.where(); got != "redis 10.0.0.5:6379 db 0, keys caddy/" {
		t.Fatalf("where: %q", got)
	}
	if got := ok.where(); got != "sentinel primary mymaster via 10.0.0.5:26379, [2001:db8::5]:26379 db 0, keys caddy/" {
		t.Fatalf("where: %q", got)
	}
}

func TestSealRoundTripWrongKeyAndPlain(t *testing.T) {
	a, err := newSealer("the fleet's key")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newSealer("another key")
	plain := []byte("-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n")
	sealed, err := a.seal("certificates/x/a.test/a.test.crt", plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("BEGIN")) || !bytes.HasPrefix(sealed, sealedMagic) {
		t.Fatalf("sealed value is not sealed: %q", sealed)
	}
	again, _ := a.seal("certificates/x/a.test/a.test.crt", plain)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
	got, err := a.open("certificates/x/a.test/a.test.crt", sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip: %v %q", err, got)
	}
	if _, err := b.open("certificates/x/a.test/a.test.crt", sealed); err == nil || !strings.Contains(err.Error(), "another encryption_key") || strings.Contains(err.Error(), "another key") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := a.open("certificates/x/b.test/b.test.crt", sealed); err == nil {
		t.Fatal("a sealed value opened under another key name")
	}
	if _, err := sealerNone.open("k", sealed); err == nil || !strings.Contains(err.Error(), "no encryption_key") {
		t.Fatalf("sealed value without a key: %v", err)
	}
	// A value stored before encryption was turned on (or copied in plain) still loads.
	if got, err := a.open("k", plain); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("plain value: %v", err)
	}
	if got, _ := sealerNone.seal("k", plain); !bytes.Equal(got, plain) {
		t.Fatal("without a key the value must be stored as it is")
	}
}

func TestListKeysDirectChildrenAndWalk(t *testing.T) {
	rel := []string{"acme/a.test/a.test.crt", "acme/a.test/a.test.key", "acme/b.test/b.test.crt", "other/x.json"}
	if got, want := listKeys("certificates", rel, false), []string{"certificates/acme", "certificates/other"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("direct children: %v", got)
	}
	want := []string{
		"certificates/acme", "certificates/acme/a.test", "certificates/acme/a.test/a.test.crt", "certificates/acme/a.test/a.test.key",
		"certificates/acme/b.test", "certificates/acme/b.test/b.test.crt", "certificates/other", "certificates/other/x.json",
	}
	if got := listKeys("certificates", rel, true); !reflect.DeepEqual(got, want) {
		t.Fatalf("walk: %v", got)
	}
	if got := listKeys("", []string{"a/b", "c"}, false); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Fatalf("root: %v", got)
	}
}

func TestKeyNaming(t *testing.T) {
	s := &store{prefix: "fleet-1"}
	if got := s.rkey("certificates/acme/a.test/a.test.crt"); got != "fleet-1/certificates/acme/a.test/a.test.crt" {
		t.Fatal(got)
	}
	if got := s.lockKey("issue_cert_*.example.com"); got != "fleet-1/locks/issue_cert_wildcard_.example.com" {
		t.Fatal(got)
	}
	if got := globEscape(`a*b?c[d]e\f`); got != `a\*b\?c\[d\]e\\f` {
		t.Fatal(got)
	}
	if nameOfFolder("wildcard_.example.com") != "*.example.com" || nameOfFolder("a.test") != "a.test" {
		t.Fatal("folder names")
	}
}

func TestErrorsNameOperationAndAddressWithoutSecrets(t *testing.T) {
	s := &store{addresses: []string{"10.0.0.5:6379"}, where: "redis 10.0.0.5:6379 db 0, keys caddy/", secrets: []string{"s3cret-pass"}}
	cause := context.DeadlineExceeded
	err := s.fail("load", "certificates/x", cause)
	if !strings.HasPrefix(err.Error(), "redis storage: load certificates/x: ") || !strings.Contains(err.Error(), "10.0.0.5:6379") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
	err = s.fail("store", "k", errors.New("WRONGPASS invalid username-password pair or user is disabled."))
	if !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("%v", err)
	}
	err = s.fail("store", "k", errors.New("ERR something quoting s3cret-pass"))
	if strings.Contains(err.Error(), "s3cret-pass") {
		t.Fatalf("secret in %v", err)
	}
}

func TestPoolSharesOneStorePerConfiguration(t *testing.T) {
	made := 0
	mk := func() (*store, error) {
		made++
		return &store{locks: map[string]*heldLock{}, client: nil}, nil
	}
	a, fresh, _ := acquire("k1", mk)
	b, fresh2, _ := acquire("k1", mk)
	if a != b || !fresh || fresh2 || made != 1 {
		t.Fatalf("same configuration: made %d", made)
	}
	poolMu.Lock()
	refs := pool["k1"].refs
	poolMu.Unlock()
	if refs != 2 {
		t.Fatalf("refs %d", refs)
	}
	// Released once: still in the pool (the next configuration uses it).
	release("k1")
	poolMu.Lock()
	_, still := pool["k1"]
	poolMu.Unlock()
	if !still {
		t.Fatal("released while still used")
	}
	poolMu.Lock()
	delete(pool, "k1") // the store has no client to close here
	poolMu.Unlock()
}

func TestProbeAndCertificatesOnFileStorage(t *testing.T) {
	dir := t.TempDir()
	st := &certmagic.FileStorage{Path: dir}
	ans := Probe(context.Background(), st)
	if !ans.OK || ans.Module != "file_system" || ans.Detail != "folder "+dir || ans.Error != nil {
		t.Fatalf("%+v", ans)
	}
	ctx := context.Background()
	if certs, err := ListCertificates(ctx, st); err != nil || len(certs) != 0 {
		t.Fatalf("empty storage: %v %v", certs, err)
	}
	notAfter := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	pemCert := selfSigned(t, "*.example.com", "Test CA R1", notAfter)
	_ = st.Store(ctx, "certificates/acme-v02.api.letsencrypt.org-directory/wildcard_.example.com/wildcard_.example.com.crt", pemCert)
	_ = st.Store(ctx, "certificates/acme-v02.api.letsencrypt.org-directory/wildcard_.example.com/wildcard_.example.com.key", []byte("key"))
	_ = st.Store(ctx, "certificates/local/broken.test/broken.test.crt", []byte("not pem"))
	certs, err := ListCertificates(ctx, st)
	if err != nil || len(certs) != 1 {
		t.Fatalf("%v %+v", err, certs)
	}
	c := certs[0]
	if c.Name != "*.example.com" || c.IssuerKey != "acme-v02.api.letsencrypt.org-directory" || c.NotAfter != "2030-01-02T03:04:05Z" || c.Issuer != "Test CA R1" {
		t.Fatalf("%+v", c)
	}
	if _, err := st.Load(ctx, "panel-health/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	missing := Probe(ctx, &certmagic.FileStorage{Path: "/proc/no-such-folder"})
	if missing.OK || missing.Error == nil || !strings.Contains(*missing.Error, "write panel-health/") {
		t.Fatalf("%+v", missing)
	}
}

func selfSigned(t *testing.T, name, issuerCN string, notAfter time.Time) []byte {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{CommonName: issuerCN},
		DNSNames:     []string{name},
		NotBefore:    notAfter.Add(-time.Hour),
		NotAfter:     notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
