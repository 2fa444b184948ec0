package storageext

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// sealedMagic starts every sealed value. What certmagic stores (PEM, JSON) never
// starts with a zero byte, so a value without it is read as plain: a storage copied
// in before encryption was turned on still loads, and is sealed at its next write.
var sealedMagic = []byte("\x00PRS1")

const hkdfInfo = "edge-panel caddy.storage.panel_redis value key v1"

// errWrongKey says what to fix without the key.
var errWrongKey = errors.New("the value is sealed with another encryption_key than this node's (or it is damaged): give every node the same proxy.storage.encryption_key")

type sealer struct {
	aead cipher.AEAD
}

// sealerNone stores values as they are.
var sealerNone = sealer{}

func newSealer(secret string) (sealer, error) {
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, hkdfInfo, 32)
	if err != nil {
		return sealer{}, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead}, nil
}

func (s sealer) enabled() bool { return s.aead != nil }

// seal binds the value to its key (the additional data), so a sealed value copied
// under another key does not open.
func (s sealer) seal(key string, value []byte) ([]byte, error) {
	if s.aead == nil {
		return value, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(sealedMagic)+len(nonce)+len(value)+s.aead.Overhead())
	out = append(out, sealedMagic...)
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, value, []byte(key)), nil
}

// open reads a sealed value, or a plain one as it is.
func (s sealer) open(key string, value []byte) ([]byte, error) {
	if !bytes.HasPrefix(value, sealedMagic) {
		return value, nil
	}
	if s.aead == nil {
		return nil, errors.New("the value is sealed but this node has no encryption_key: give every node the same proxy.storage.encryption_key")
	}
	rest := value[len(sealedMagic):]
	if len(rest) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, errWrongKey
	}
	plain, err := s.aead.Open(nil, rest[:s.aead.NonceSize()], rest[s.aead.NonceSize():], []byte(key))
	if err != nil {
		return nil, errWrongKey
	}
	return plain, nil
}
