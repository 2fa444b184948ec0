package storageext

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// store is the certmagic.Storage on Redis. Each certmagic key is one Redis hash at
// "<prefix>/<key>" with the value ("v", sealed when encryption is on), its
// modification time ("m", Unix nanoseconds) and its size ("s", before sealing), so
// Stat answers without reading the value. "Directories" are implicit, as in
// certmagic's file storage: a key is a directory when other keys start with "<key>/".
type store struct {
	client    redis.UniversalClient
	prefix    string
	sealer    sealer
	mode      string
	addresses []string
	where     string
	secrets   []string
	logger    *zap.Logger
	lockTTL   time.Duration
	lockPoll  time.Duration

	locksMu sync.Mutex
	locks   map[string]*heldLock
	closed  atomic.Bool
}

const (
	fieldValue    = "v"
	fieldModified = "m"
	fieldSize     = "s"
	scanCount     = 1000
)

func (s *store) String() string { return "panel_redis: " + s.where }

func (s *store) close() {
	s.closed.Store(true)
	s.locksMu.Lock()
	for _, l := range s.locks {
		l.stop()
	}
	s.locksMu.Unlock()
	_ = s.client.Close()
}

func (s *store) pingAtStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// A configuration that failed to load closes its client at once: nothing to say then.
	if err := s.client.Ping(ctx).Err(); err != nil && !s.closed.Load() {
		s.logger.Warn("certificate storage not reachable at start; the node serves what it holds and retries at each use",
			zap.String("storage", s.where), zap.String("error", s.fail("ping", "", err).Error()))
	}
}

// rkey is the Redis key of a certmagic key.
func (s *store) rkey(key string) string { return s.prefix + "/" + key }

// Store writes the value, its time and size in one command.
func (s *store) Store(ctx context.Context, key string, value []byte) error {
	sealed, err := s.sealer.seal(key, value)
	if err != nil {
		return s.fail("store", key, err)
	}
	err = s.client.HSet(ctx, s.rkey(key),
		fieldValue, sealed,
		fieldModified, strconv.FormatInt(time.Now().UnixNano(), 10),
		fieldSize, strconv.Itoa(len(value)),
	).Err()
	if err != nil {
		return s.fail("store", key, err)
	}
	return nil
}

// Load answers fs.ErrNotExist (wrapped) for a key that holds no value.
func (s *store) Load(ctx context.Context, key string) ([]byte, error) {
	raw, err := s.client.HGet(ctx, s.rkey(key), fieldValue).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis storage: load %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return nil, s.fail("load", key, err)
	}
	value, err := s.sealer.open(key, raw)
	if err != nil {
		return nil, s.fail("load", key, err)
	}
	return value, nil
}

// loadMany is Load for many keys, pipelined in batches.
func (s *store) loadMany(ctx context.Context, keys []string) ([][]byte, []error) {
	values, errs := make([][]byte, len(keys)), make([]error, len(keys))
	const batch = 500
	for start := 0; start < len(keys); start += batch {
		end := min(start+batch, len(keys))
		pipe := s.client.Pipeline()
		cmds := make([]*redis.StringCmd, end-start)
		for i := start; i < end; i++ {
			cmds[i-start] = pipe.HGet(ctx, s.rkey(keys[i]), fieldValue)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
		for i := start; i < end; i++ {
			raw, err := cmds[i-start].Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				errs[i] = fmt.Errorf("redis storage: load %s: %w", keys[i], fs.ErrNotExist)
			case err != nil:
				errs[i] = s.fail("load", keys[i], err)
			default:
				if values[i], err = s.sealer.open(keys[i], raw); err != nil {
					errs[i] = s.fail("load", keys[i], err)
				}
			}
		}
	}
	return values, errs
}

// Delete removes a key, or every key under it when it is a directory. A missing key
// is not an error.
func (s *store) Delete(ctx context.Context, key string) error {
	n, err := s.client.Del(ctx, s.rkey(key)).Result()
	if err != nil {
		return s.fail("delete", key, err)
	}
	if n > 0 {
		return nil
	}
	children, err := s.scan(ctx, s.rkey(key)+"/", 0)
	if err != nil {
		return s.fail("delete", key, err)
	}
	// One key per command: in cluster mode the keys live in different slots.
	for _, k := range children {
		if err := s.client.Del(ctx, k).Err(); err != nil {
			return s.fail("delete", key, err)
		}
	}
	return nil
}

// Exists: a key with a value, or a directory.
func (s *store) Exists(ctx context.Context, key string) bool {
	n, err := s.client.Exists(ctx, s.rkey(key)).Result()
	if err == nil && n > 0 {
		return true
	}
	if err != nil {
		return false
	}
	children, err := s.scan(ctx, s.rkey(key)+"/", 1)
	return err == nil && len(children) > 0
}

// List answers the keys under dir: with recursive, every key and directory below it
// (as a walk of the file storage does); without, its direct children.
func (s *store) List(ctx context.Context, dir string, recursive bool) ([]string, error) {
	dir = strings.Trim(dir, "/")
	base := s.prefix + "/"
	if dir != "" {
		base = s.rkey(dir) + "/"
	}
	found, err := s.scan(ctx, base, 0)
	if err != nil {
		return nil, s.fail("list", dir, err)
	}
	if len(found) == 0 {
		if dir != "" {
			if n, err := s.client.Exists(ctx, s.rkey(dir)).Result(); err == nil && n > 0 {
				return nil, nil // a file: nothing under it, as the file storage answers
			}
		}
		return nil, fmt.Errorf("redis storage: list %s: %w", dir, fs.ErrNotExist)
	}
	rel := make([]string, len(found))
	for i, k := range found {
		rel[i] = strings.TrimPrefix(k, base)
	}
	return listKeys(dir, rel, recursive), nil
}

// listKeys turns the paths found under dir (relative to it) into the answer of List.
func listKeys(dir string, rel []string, recursive bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		full := p
		if dir != "" {
			full = dir + "/" + p
		}
		if !seen[full] {
			seen[full] = true
			out = append(out, full)
		}
	}
	for _, r := range rel {
		parts := strings.Split(r, "/")
		if !recursive {
			add(parts[0])
			continue
		}
		for i := range parts {
			add(strings.Join(parts[:i+1], "/"))
		}
	}
	sort.Strings(out)
	return out
}

// Stat answers a file's time and size, or that the key is a directory.
func (s *store) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	rk := s.rkey(key)
	pipe := s.client.Pipeline()
	meta := pipe.HMGet(ctx, rk, fieldModified, fieldSize)
	length := pipe.HStrLen(ctx, rk, fieldValue)
	exists := pipe.HExists(ctx, rk, fieldValue)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return certmagic.KeyInfo{}, s.fail("stat", key, err)
	}
	if exists.Val() {
		info := certmagic.KeyInfo{Key: key, IsTerminal: true, Size: length.Val()}
		vals := meta.Val()
		if len(vals) == 2 {
			if m, ok := vals[0].(string); ok {
				if ns, err := strconv.ParseInt(m, 10, 64); err == nil {
					info.Modified = time.Unix(0, ns)
				}
			}
			if sz, ok := vals[1].(string); ok {
				if n, err := strconv.ParseInt(sz, 10, 64); err == nil {
					info.Size = n
				}
			}
		}
		return info, nil
	}
	children, err := s.scan(ctx, rk+"/", 1)
	if err != nil {
		return certmagic.KeyInfo{}, s.fail("stat", key, err)
	}
	if len(children) > 0 {
		return certmagic.KeyInfo{Key: key, IsTerminal: false}, nil
	}
	return certmagic.KeyInfo{}, fmt.Errorf("redis storage: stat %s: %w", key, fs.ErrNotExist)
}

// scan answers the Redis keys that start with prefix (on every primary of a
// cluster), at most limit of them when limit > 0.
func (s *store) scan(ctx context.Context, prefix string, limit int) ([]string, error) {
	pattern := globEscape(prefix) + "*"
	var mu sync.Mutex
	var out []string
	full := func() bool { return limit > 0 && len(out) >= limit }
	one := func(ctx context.Context, c redis.UniversalClient) error {
		it := c.Scan(ctx, 0, pattern, scanCount).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, it.Val())
			stop := full()
			mu.Unlock()
			if stop {
				return nil
			}
		}
		return it.Err()
	}
	var err error
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
	} else {
		err = one(ctx, s.client)
	}
	if err != nil {
		return nil, err
	}
	// A SCAN may answer a key twice; the order is the keys'.
	sort.Strings(out)
	out = dedupe(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// globEscape makes a key prefix literal in a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// storageError names the operation, the key and where the storage is; its text
// never holds a password or the encryption key (they are cut out should a
// server's answer quote one). errors.Is sees the cause (a context's end, say).
type storageError struct {
	msg string
	err error
}

func (e *storageError) Error() string { return e.msg }
func (e *storageError) Unwrap() error { return e.err }

func (s *store) fail(op, key string, err error) error {
	why := err.Error()
	lower := strings.ToLower(why)
	if strings.Contains(why, "WRONGPASS") || strings.Contains(why, "NOAUTH") || strings.Contains(lower, "auth") && strings.Contains(lower, "password") {
		why = "authentication failed: the server refused the username or password (" + why + ")"
	}
	named := false
	for _, a := range s.addresses {
		if strings.Contains(why, a) {
			named = true
		}
	}
	if !named {
		why += " (" + s.where + ")"
	}
	what := op
	if key != "" {
		what += " " + key
	}
	msg := "redis storage: " + what + ": " + why
	for _, secret := range s.secrets {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	return &storageError{msg: msg, err: err}
}

// Locks: "<prefix>/locks/<name>" holds the holder's random token, set only if absent
// and with an expiry the holder keeps pushing back while it holds the lock. Only the
// holder's token deletes it. A node that dies holding a lock lets it expire.

type heldLock struct {
	key    string
	token  string
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *heldLock) stop() {
	l.cancel()
	<-l.done
}

var (
	refreshScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
)

func (s *store) lockKey(name string) string {
	return s.prefix + "/locks/" + certmagic.StorageKeys.Safe(name)
}

// TryLock takes the lock if it is free.
func (s *store) TryLock(ctx context.Context, name string) (bool, error) {
	token := randomToken()
	key := s.lockKey(name)
	ok, err := s.client.SetNX(ctx, key, token, s.lockTTL).Result()
	if err != nil {
		return false, s.fail("lock", name, err)
	}
	if !ok {
		return false, nil
	}
	rctx, cancel := context.WithCancel(context.Background())
	l := &heldLock{key: key, token: token, cancel: cancel, done: make(chan struct{})}
	s.locksMu.Lock()
	if old := s.locks[name]; old != nil {
		// Ours and expired before it was unlocked (its refresh failed): that holder lost it.
		old.cancel()
	}
	s.locks[name] = l
	s.locksMu.Unlock()
	go s.keepFresh(rctx, name, l)
	return true, nil
}

// How long Lock keeps asking through storage errors (a Sentinel failover) before it
// gives up with the last error.
const lockErrorPatience = 60 * time.Second

// Lock waits until the lock is free and takes it, or the context ends.
func (s *store) Lock(ctx context.Context, name string) error {
	var firstErr time.Time
	for {
		ok, err := s.TryLock(ctx, name)
		if ok {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			if firstErr.IsZero() {
				firstErr = time.Now()
			} else if time.Since(firstErr) > lockErrorPatience {
				return err
			}
		} else {
			firstErr = time.Time{}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis storage: lock %s: %w", name, ctx.Err())
		case <-time.After(s.lockPoll):
		}
	}
}

func (s *store) keepFresh(ctx context.Context, name string, l *heldLock) {
	defer close(l.done)
	t := time.NewTicker(s.lockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, s.lockTTL/3)
		n, err := refreshScript.Run(rctx, s.client, []string{l.key}, l.token, s.lockTTL.Milliseconds()).Int()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.logger.Warn("could not refresh a held lock; it expires unless a later refresh succeeds",
				zap.String("lock", name), zap.String("error", s.fail("refresh lock", name, err).Error()))
			continue
		}
		if n == 0 {
			s.logger.Warn("a held lock expired before it was refreshed and is no longer this node's", zap.String("lock", name), zap.String("storage", s.where))
			return
		}
	}
}

// Unlock releases the lock if this node still holds it.
func (s *store) Unlock(ctx context.Context, name string) error {
	s.locksMu.Lock()
	l := s.locks[name]
	delete(s.locks, name)
	s.locksMu.Unlock()
	if l == nil {
		return fmt.Errorf("redis storage: unlock %s: this node does not hold that lock", name)
	}
	l.stop()
	n, err := releaseScript.Run(ctx, s.client, []string{l.key}, l.token).Int()
	if err != nil {
		return s.fail("unlock", name, err)
	}
	if n == 0 {
		return fmt.Errorf("redis storage: unlock %s: the lock had expired and is no longer this node's", name)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Interface guards
var (
	_ certmagic.Storage   = (*store)(nil)
	_ certmagic.TryLocker = (*store)(nil)
)
