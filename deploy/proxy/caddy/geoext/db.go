package geoext

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/oschwald/maxminddb-golang"
)

// One open database per file for the whole process: every host's matcher that
// names the same path shares it (a panel with hundreds of geo hosts must not hold
// hundreds of copies), through a usage pool keyed by path, so a config reload
// keeps the reader the old and the new config both use.
var databases = caddy.NewUsagePool()

// recheckEvery bounds how often a lookup stats the file. The panel's refresh
// renames a new file into place; the next lookup after this interval sees the
// new inode (or size or mtime) and reopens it, with no restart and no push.
var recheckEvery = 2 * time.Second

type fileID struct {
	ino   uint64
	size  int64
	mtime int64
}

type loaded struct {
	reader *maxminddb.Reader // nil: the file is missing or unreadable
	id     fileID
}

// database is one MaxMind-format file, reopened when it is replaced.
type database struct {
	path      string
	cur       atomic.Pointer[loaded]
	checkedAt atomic.Int64 // unix nanoseconds of the last stat
	mu        sync.Mutex   // one reopen at a time
}

// Destruct implements caddy.Destructor; the reader holds the file's bytes in
// memory (not a mapping), so nothing is left to release but the reference.
func (d *database) Destruct() error { return nil }

func openShared(path string) (*database, error) {
	v, _, err := databases.LoadOrNew(path, func() (caddy.Destructor, error) {
		d := &database{path: path}
		d.reload(time.Now())
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*database), nil
}

func releaseShared(path string) {
	_, _ = databases.Delete(path)
}

func statID(path string) (fileID, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.ino = uint64(sys.Ino)
	}
	return id, nil
}

// reload opens the file when it differs from the one in use. The bytes are read
// into memory (FromBytes), never mapped: a lookup still running on the old reader
// keeps its bytes alive after the swap, where an unmapped file would crash it.
func (d *database) reload(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checkedAt.Store(now.UnixNano())
	id, err := statID(d.path)
	if err != nil {
		// Missing: every address is unknown until a file appears (docs/access-control.md).
		d.cur.Store(&loaded{})
		return
	}
	if cur := d.cur.Load(); cur != nil && cur.reader != nil && cur.id == id {
		return
	}
	data, err := os.ReadFile(d.path)
	if err != nil {
		d.cur.Store(&loaded{})
		return
	}
	r, err := maxminddb.FromBytes(data)
	if err != nil {
		// A corrupt file answers nothing rather than failing the request; the panel
		// checks each download before renaming it into place, so this is a hand-made file.
		caddy.Log().Named("panel_geo").Warn(fmt.Sprintf("geolocation database %s does not open: %v", d.path, err))
		d.cur.Store(&loaded{id: id})
		return
	}
	d.cur.Store(&loaded{reader: r, id: id})
}

// get returns the reader in use (nil when the file is missing), restatting the
// file at most every recheckEvery; one request pays the stat, the others go on.
func (d *database) get() *maxminddb.Reader {
	now := time.Now()
	last := d.checkedAt.Load()
	if now.UnixNano()-last >= int64(recheckEvery) && d.checkedAt.CompareAndSwap(last, now.UnixNano()) {
		d.reload(now)
	}
	if cur := d.cur.Load(); cur != nil {
		return cur.reader
	}
	return nil
}

type countryRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
	CountryCode   string `maxminddb:"country_code"`
	ContinentCode string `maxminddb:"continent_code"`
}

type asnRecord struct {
	Number uint32 `maxminddb:"autonomous_system_number"`
}

// country answers the address's country and continent codes; empty when the
// database does not place it (or is missing). The same fields, in the same order,
// as the panel's countryOfRecord (server/utils/geo/walker.ts).
func (d *database) country(ip net.IP) (string, string) {
	r := d.get()
	if r == nil {
		return "", ""
	}
	var rec countryRecord
	if err := r.Lookup(ip, &rec); err != nil {
		return "", ""
	}
	cc := rec.Country.ISOCode
	if cc == "" {
		cc = rec.CountryCode
	}
	if cc == "" {
		cc = rec.RegisteredCountry.ISOCode
	}
	cont := rec.Continent.Code
	if cont == "" {
		cont = rec.ContinentCode
	}
	return cc, cont
}

// asn answers the address's AS number, 0 when unknown.
func (d *database) asn(ip net.IP) uint32 {
	r := d.get()
	if r == nil {
		return 0
	}
	var rec asnRecord
	if err := r.Lookup(ip, &rec); err != nil {
		return 0
	}
	return rec.Number
}
