package storageext

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/certmagic"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// Admin is the admin API module `admin.api.panel_storage`: what a node tells the
// panel about the storage of the configuration it runs (docs/scaling.md). It listens
// wherever the admin API does (the panel's side of the node only).
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.panel_storage",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the module's two routes.
func (a *Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/panel/storage/health", Handler: caddy.AdminHandlerFunc(a.health)},
		{Pattern: "/panel/storage/certificates", Handler: caddy.AdminHandlerFunc(a.certificates)},
	}
}

// HealthAnswer is GET /panel/storage/health (NodeStorageHealthAnswer in the panel).
type HealthAnswer struct {
	Module    string  `json:"module"`
	OK        bool    `json:"ok"`
	Error     *string `json:"error"`
	LatencyMS int64   `json:"latency_ms"`
	Detail    string  `json:"detail"`
}

// Certificate is one entry of GET /panel/storage/certificates.
type Certificate struct {
	Key       string `json:"key"`
	Name      string `json:"name"`
	IssuerKey string `json:"issuer_key"`
	NotAfter  string `json:"not_after"`
	Issuer    string `json:"issuer"`
}

// CertificatesAnswer is GET /panel/storage/certificates (StorageCertificatesAnswer in the panel).
type CertificatesAnswer struct {
	Certificates []Certificate `json:"certificates"`
}

const probeTimeout = 3 * time.Second

// activeStorage is the storage of the running configuration (nil before the first one).
func activeStorage() certmagic.Storage {
	ctx := caddy.ActiveContext()
	if ctx.Context == nil {
		return nil
	}
	return ctx.Storage()
}

func describe(st certmagic.Storage) (module, detail string) {
	switch v := st.(type) {
	case *store:
		return "panel_redis", v.where
	case *certmagic.FileStorage:
		return "file_system", "folder " + v.Path
	case nil:
		return "none", "no configuration is running"
	default:
		t := reflect.TypeOf(st)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return t.String(), fmt.Sprint(st)
	}
}

func methodGET(r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	return nil
}

func (a *Admin) health(w http.ResponseWriter, r *http.Request) error {
	if err := methodGET(r); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, Probe(r.Context(), activeStorage()))
}

// Probe writes a key of its own, reads it back and deletes it.
func Probe(ctx context.Context, st certmagic.Storage) HealthAnswer {
	module, detail := describe(st)
	ans := HealthAnswer{Module: module, Detail: detail}
	if st == nil {
		msg := "no configuration is running on this node"
		ans.Error = &msg
		return ans
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	t0 := time.Now()
	err := probe(ctx, st)
	ans.LatencyMS = time.Since(t0).Milliseconds()
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) && !strings.Contains(msg, "deadline") {
			msg += " (no answer within 3 s)"
		}
		ans.Error = &msg
		return ans
	}
	ans.OK = true
	return ans
}

func probe(ctx context.Context, st certmagic.Storage) error {
	key := "panel-health/" + randomToken()
	value := []byte("probe " + time.Now().UTC().Format(time.RFC3339Nano))
	if err := st.Store(ctx, key, value); err != nil {
		return stepError("write", key, err)
	}
	got, err := st.Load(ctx, key)
	// The probe key goes even when the read failed.
	derr := st.Delete(context.WithoutCancel(ctx), key)
	if err != nil {
		return stepError("read back", key, err)
	}
	if !bytes.Equal(got, value) {
		return fmt.Errorf("read back %s: the storage answered another value than was written", key)
	}
	if derr != nil {
		return stepError("delete", key, derr)
	}
	return nil
}

// stepError names the probe's step, unless the storage's own error does already
// (the Redis storage's errors name the operation, the key and the address).
func stepError(step, key string, err error) error {
	var named *storageError
	if errors.As(err, &named) {
		return err
	}
	return fmt.Errorf("%s %s: %w", step, key, err)
}

func (a *Admin) certificates(w http.ResponseWriter, r *http.Request) error {
	if err := methodGET(r); err != nil {
		return err
	}
	st := activeStorage()
	if st == nil {
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no configuration is running on this node"})
	}
	certs, err := ListCertificates(r.Context(), st)
	if err != nil {
		_, detail := describe(st)
		msg := err.Error()
		if !strings.Contains(msg, detail) {
			msg = fmt.Sprintf("%s (%s)", msg, detail)
		}
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": msg})
	}
	return writeJSON(w, http.StatusOK, CertificatesAnswer{Certificates: certs})
}

// ListCertificates reads every certificate certmagic keeps
// (certificates/<issuer key>/<name>/<name>.crt) and its expiry. A certificate that
// goes between the listing and the read is left out; one that is not a certificate
// is left out too (it is not one the node can serve).
func ListCertificates(ctx context.Context, st certmagic.Storage) ([]Certificate, error) {
	out := []Certificate{}
	keys, err := st.List(ctx, "certificates", true)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var crts []string
	for _, key := range keys {
		if strings.HasSuffix(key, ".crt") && strings.Count(key, "/") == 3 {
			crts = append(crts, key)
		}
	}
	values, errs := loadAll(ctx, st, crts)
	for i, key := range crts {
		parts := strings.Split(key, "/")
		raw, err := values[i], errs[i]
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cert := firstCertificate(raw)
		if cert == nil {
			continue
		}
		issuer := cert.Issuer.CommonName
		if issuer == "" {
			issuer = cert.Issuer.String()
		}
		out = append(out, Certificate{
			Key:       key,
			Name:      nameOfFolder(parts[2]),
			IssuerKey: parts[1],
			NotAfter:  cert.NotAfter.UTC().Format(time.RFC3339),
			Issuer:    issuer,
		})
	}
	return out, nil
}

// loadAll reads the keys; the Redis storage reads them in pipelined batches (one
// round trip per batch rather than per certificate, for fleets with many hosts).
func loadAll(ctx context.Context, st certmagic.Storage, keys []string) ([][]byte, []error) {
	if rs, ok := st.(*store); ok {
		return rs.loadMany(ctx, keys)
	}
	values, errs := make([][]byte, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		values[i], errs[i] = st.Load(ctx, k)
	}
	return values, errs
}

// nameOfFolder turns certmagic's safe folder name back into the name served.
func nameOfFolder(folder string) string {
	if rest, ok := strings.CutPrefix(folder, "wildcard_"); ok {
		return "*" + rest
	}
	return folder
}

func firstCertificate(raw []byte) *x509.Certificate {
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			return nil
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil
			}
			return cert
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// Interface guards
var _ caddy.AdminRouter = (*Admin)(nil)
