// Package storageext is the proxy's certificate storage on Redis (docs/scaling.md,
// "Redis: certificates without a shared folder"): the Caddy storage module
// `caddy.storage.panel_redis`, a certmagic.Storage on go-redis, and the admin API
// module `admin.api.panel_storage` through which the panel asks a node about the
// storage it runs (health, and the certificates it holds).
//
// The project's own module because the third-party Caddy storage modules on Redis
// are not served by the module registry this project builds from (docs/scaling.md).
package storageext

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(RedisStorage{})
}

// RedisStorage is the module `caddy.storage.panel_redis`. Its JSON is what the
// panel pushes as the configuration's "storage" (docs/scaling.md).
type RedisStorage struct {
	// "single" (one server, the default), "sentinel" (addresses are the Sentinels')
	// or "cluster" (some of the cluster's nodes).
	Mode      string   `json:"mode,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	// The primary's name in Sentinel (`sentinel monitor <name> ...`); sentinel mode only.
	SentinelMaster   string `json:"sentinel_master,omitempty"`
	Username         string `json:"username,omitempty"`
	Password         string `json:"password,omitempty"`
	SentinelPassword string `json:"sentinel_password,omitempty"`
	DB               int    `json:"db,omitempty"`
	TLS              *TLS   `json:"tls,omitempty"`
	// Every key starts with "<key_prefix>/" ("caddy" when empty).
	KeyPrefix string `json:"key_prefix,omitempty"`
	// When set, every value is sealed with AES-256-GCM under a key derived from it.
	EncryptionKey string `json:"encryption_key,omitempty"`

	store   *store
	poolKey string
}

// TLS is how the module reaches Redis over TLS.
type TLS struct {
	Enabled bool `json:"enabled,omitempty"`
	// The name checked in the server's certificate (default: the address's host).
	ServerName string `json:"server_name,omitempty"`
	// PEM of the CA that signed the server's certificate (default: the system's roots).
	CAPEM string `json:"ca_pem,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.storage.panel_redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

const (
	modeSingle   = "single"
	modeSentinel = "sentinel"
	modeCluster  = "cluster"
	maxAddresses = 16
)

var keyPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validate answers the first problem of the configuration in words an operator can
// act on, without quoting a password or a key. It fills in the defaults.
func (r *RedisStorage) validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("storage panel_redis: "+format, args...)
	}
	if r.Mode == "" {
		r.Mode = modeSingle
	}
	if r.KeyPrefix == "" {
		r.KeyPrefix = "caddy"
	}
	switch r.Mode {
	case modeSingle, modeSentinel, modeCluster:
	default:
		return fail("mode must be single, sentinel or cluster (got %q)", r.Mode)
	}
	if len(r.Addresses) == 0 {
		return fail("addresses must name at least one host:port, such as 10.0.0.5:6379")
	}
	if len(r.Addresses) > maxAddresses {
		return fail("addresses must name at most %d servers (got %d)", maxAddresses, len(r.Addresses))
	}
	for _, a := range r.Addresses {
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fail("address %q must be host:port such as 10.0.0.5:6379 (IPv6 as [2001:db8::5]:6379)", a)
		}
	}
	if r.Mode == modeSingle && len(r.Addresses) > 1 {
		return fail("single mode takes one address (got %d); several are for sentinel or cluster mode", len(r.Addresses))
	}
	if r.Mode == modeSentinel && r.SentinelMaster == "" {
		return fail("sentinel mode needs sentinel_master, the primary's name in Sentinel ('sentinel monitor <name> ...')")
	}
	if r.Mode != modeSentinel && r.SentinelMaster != "" {
		return fail("sentinel_master is for sentinel mode only (mode is %s)", r.Mode)
	}
	if r.Mode != modeSentinel && r.SentinelPassword != "" {
		return fail("sentinel_password is for sentinel mode only (mode is %s)", r.Mode)
	}
	if r.DB < 0 || r.DB > 15 {
		return fail("db must be from 0 to 15 (got %d)", r.DB)
	}
	if r.Mode == modeCluster && r.DB != 0 {
		return fail("db must be 0 in cluster mode (Redis Cluster has only database 0)")
	}
	if !keyPrefixPattern.MatchString(r.KeyPrefix) {
		return fail("key_prefix must be 1 to 64 letters, digits, dots, dashes or underscores (got %q)", r.KeyPrefix)
	}
	if r.TLS != nil && !r.TLS.Enabled && (r.TLS.ServerName != "" || r.TLS.CAPEM != "") {
		return fail("tls.server_name and tls.ca_pem need tls.enabled true")
	}
	if r.TLS != nil && r.TLS.CAPEM != "" {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(r.TLS.CAPEM)) {
			return fail("tls.ca_pem holds no PEM certificate (it must be the CA certificate that signed the Redis server's, -----BEGIN CERTIFICATE-----)")
		}
	}
	return nil
}

// Provision validates the configuration and takes the client of this configuration
// from the pool (the same one the previous configuration used when nothing changed,
// so a push of the same storage does not reconnect). It does not reach Redis: a node
// that cannot reach its storage still loads its configuration and serves what it holds.
func (r *RedisStorage) Provision(ctx caddy.Context) error {
	if err := r.validate(); err != nil {
		return err
	}
	logger := ctx.Logger()
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("storage panel_redis: %v", err)
	}
	sum := sha256.Sum256(raw)
	r.poolKey = hex.EncodeToString(sum[:])
	s, fresh, err := acquire(r.poolKey, func() (*store, error) { return r.newStore(logger) })
	if err != nil {
		return err
	}
	r.store = s
	if fresh {
		// Said in the log, never a refusal: the node keeps serving what it holds.
		go s.pingAtStart()
	}
	return nil
}

// CertMagicStorage returns the storage Caddy and certmagic use.
func (r *RedisStorage) CertMagicStorage() (certmagic.Storage, error) {
	if r.store == nil {
		return nil, errors.New("storage panel_redis: not provisioned")
	}
	return r.store, nil
}

// Cleanup gives the client back to the pool; the last configuration using it closes it.
func (r *RedisStorage) Cleanup() error {
	if r.poolKey != "" {
		release(r.poolKey)
	}
	return nil
}

func (r *RedisStorage) newStore(logger *zap.Logger) (*store, error) {
	var tlsConfig *tls.Config
	if r.TLS != nil && r.TLS.Enabled {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: r.TLS.ServerName}
		if r.TLS.CAPEM != "" {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(r.TLS.CAPEM))
			tlsConfig.RootCAs = pool
		}
	}
	var client redis.UniversalClient
	switch r.Mode {
	case modeSentinel:
		client = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            r.SentinelMaster,
			SentinelAddrs:         r.Addresses,
			SentinelPassword:      r.SentinelPassword,
			Username:              r.Username,
			Password:              r.Password,
			DB:                    r.DB,
			TLSConfig:             tlsConfig,
			ContextTimeoutEnabled: true,
			DialTimeout:           dialTimeout,
		})
	case modeCluster:
		client = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 r.Addresses,
			Username:              r.Username,
			Password:              r.Password,
			TLSConfig:             tlsConfig,
			ContextTimeoutEnabled: true,
			DialTimeout:           dialTimeout,
		})
	default:
		client = redis.NewClient(&redis.Options{
			Addr:                  r.Addresses[0],
			Username:              r.Username,
			Password:              r.Password,
			DB:                    r.DB,
			TLSConfig:             tlsConfig,
			ContextTimeoutEnabled: true,
			DialTimeout:           dialTimeout,
		})
	}
	var aead = sealerNone
	if r.EncryptionKey != "" {
		var err error
		if aead, err = newSealer(r.EncryptionKey); err != nil {
			client.Close()
			return nil, fmt.Errorf("storage panel_redis: encryption_key: %v", err)
		}
	}
	return &store{
		client:    client,
		prefix:    r.KeyPrefix,
		sealer:    aead,
		mode:      r.Mode,
		addresses: append([]string(nil), r.Addresses...),
		where:     r.where(),
		secrets:   nonEmpty(r.Password, r.SentinelPassword, r.EncryptionKey),
		logger:    logger,
		lockTTL:   lockTTL,
		lockPoll:  lockPoll,
		locks:     map[string]*heldLock{},
	}, nil
}

// where is the storage's place in words, for the health answer and error messages.
func (r *RedisStorage) where() string {
	var b strings.Builder
	switch r.Mode {
	case modeSentinel:
		fmt.Fprintf(&b, "sentinel primary %s via %s db %d", r.SentinelMaster, strings.Join(r.Addresses, ", "), r.DB)
	case modeCluster:
		fmt.Fprintf(&b, "redis cluster via %s", strings.Join(r.Addresses, ", "))
	default:
		fmt.Fprintf(&b, "redis %s db %d", r.Addresses[0], r.DB)
	}
	if r.TLS != nil && r.TLS.Enabled {
		b.WriteString(" over TLS")
	}
	fmt.Fprintf(&b, ", keys %s/", r.KeyPrefix)
	if r.EncryptionKey != "" {
		b.WriteString(", values encrypted")
	}
	return b.String()
}

func nonEmpty(values ...string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// The pool: one store (one client, one set of held locks) per distinct configuration,
// counted by the configurations that use it. Caddy provisions the new configuration
// before it cleans up the old one, so a push that keeps the storage keeps the client.
var (
	poolMu sync.Mutex
	pool   = map[string]*poolEntry{}
)

type poolEntry struct {
	store *store
	refs  int
}

func acquire(key string, create func() (*store, error)) (*store, bool, error) {
	poolMu.Lock()
	defer poolMu.Unlock()
	if e, ok := pool[key]; ok {
		e.refs++
		return e.store, false, nil
	}
	s, err := create()
	if err != nil {
		return nil, false, err
	}
	pool[key] = &poolEntry{store: s, refs: 1}
	return s, true, nil
}

func release(key string) {
	poolMu.Lock()
	e, ok := pool[key]
	if ok {
		e.refs--
		if e.refs <= 0 {
			delete(pool, key)
		}
	}
	poolMu.Unlock()
	if ok && e.refs <= 0 {
		e.store.close()
	}
}

const (
	dialTimeout = 3 * time.Second
	// A held lock lives this long without its holder refreshing it: a node that dies
	// holding one lets the others go on after this.
	lockTTL = 10 * time.Second
	// How often a waiting node asks for a lock (certmagic's file storage waits 1 s too).
	lockPoll = time.Second
)

// Interface guards
var (
	_ caddy.StorageConverter = (*RedisStorage)(nil)
	_ caddy.Provisioner      = (*RedisStorage)(nil)
	_ caddy.CleanerUpper     = (*RedisStorage)(nil)
)
