package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
)

// Cache is ct-client's prefetch cache (Cybertwin §V-B1: content prefetched
// to the device before the app asks). It is disk-backed (one body file and
// one JSON metadata file per URL, so it survives a restart), bounded in
// total body bytes (least recently used out first), and honours freshness:
// an entry is served only before its expiry, taken from the response's
// Cache-Control max-age, else Expires, else the cache's default TTL;
// no-store and no-cache responses are not kept.
type Cache struct {
	dir    string
	max    int64
	defTTL time.Duration

	mu      sync.Mutex
	entries map[string]*cacheEntry // by URL
	size    int64
	hits    atomic.Int64
}

type cacheEntry struct {
	Meta     cacheMeta
	key      string
	lastUsed time.Time
}

type cacheMeta struct {
	URL     string      `json:"url"`
	Status  int         `json:"status"`
	Header  http.Header `json:"header"`
	Stored  time.Time   `json:"stored"`
	Expires time.Time   `json:"expires"`
	Size    int64       `json:"size"`
}

// OpenCache opens (creating it if needed) the cache in dir, keeping at
// most maxBytes of bodies; defaultTTL is the freshness of responses that
// state none. Entries left by an earlier run are loaded; expired, partial
// or corrupt ones are removed.
func OpenCache(dir string, maxBytes int64, defaultTTL time.Duration, now time.Time) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, errors.New("cache: size must be > 0")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{dir: dir, max: maxBytes, defTTL: defaultTTL, entries: map[string]*cacheEntry{}}
	names, err := filepath.Glob(filepath.Join(dir, "*.meta"))
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	for _, name := range names {
		key := strings.TrimSuffix(filepath.Base(name), ".meta")
		data, err := os.ReadFile(name)
		fi, serr := os.Stat(c.bodyPath(key))
		var m cacheMeta
		if err == nil && serr == nil {
			m, err = parseCacheMeta(key, data, fi.Size(), now)
		}
		if err != nil || serr != nil {
			c.remove(key)
			continue
		}
		c.entries[m.URL] = &cacheEntry{Meta: m, key: key, lastUsed: fi.ModTime()}
		c.size += m.Size
	}
	// Temporary files of an interrupted Put.
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

// parseCacheMeta reads the metadata file of cache entry key whose body
// file has bodySize bytes: it must describe that body, under that key, with
// a status the cache can serve, and still be fresh at now.
func parseCacheMeta(key string, data []byte, bodySize int64, now time.Time) (cacheMeta, error) {
	var m cacheMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("cache metadata %s: %v", key, err)
	}
	switch {
	case keyOf(m.URL) != key:
		return m, fmt.Errorf("cache metadata %s: URL %q is not its key", key, m.URL)
	case m.Size != bodySize:
		return m, fmt.Errorf("cache metadata %s: size %d, body has %d", key, m.Size, bodySize)
	case m.Status < 200 || m.Status > 299:
		return m, fmt.Errorf("cache metadata %s: status %d", key, m.Status)
	case !now.Before(m.Expires):
		return m, fmt.Errorf("cache metadata %s: expired", key)
	}
	return m, nil
}

func keyOf(u string) string {
	h := sha256.Sum256([]byte(u))
	return hex.EncodeToString(h[:])
}

func (c *Cache) bodyPath(key string) string { return filepath.Join(c.dir, key+".body") }
func (c *Cache) metaPath(key string) string { return filepath.Join(c.dir, key+".meta") }

func (c *Cache) remove(key string) {
	os.Remove(c.metaPath(key)) // metadata first: a body without it is ignored
	os.Remove(c.bodyPath(key))
}

// expiry is when a response stored at now stops being fresh; ok is false
// when it must not be cached at all.
func (c *Cache) expiry(h http.Header, now time.Time) (time.Time, bool) {
	cc := strings.ToLower(strings.Join(h.Values("Cache-Control"), ","))
	maxAge := int64(-1)
	for _, d := range strings.Split(cc, ",") {
		d = strings.TrimSpace(d)
		switch {
		case d == "no-store" || d == "no-cache" || d == "private":
			return time.Time{}, false
		case strings.HasPrefix(d, "max-age="):
			if n, err := strconv.ParseInt(strings.Trim(d[len("max-age="):], `"`), 10, 64); err == nil && n >= 0 {
				maxAge = n
			}
		}
	}
	if maxAge >= 0 {
		if maxAge == 0 {
			return time.Time{}, false
		}
		return now.Add(time.Duration(min(maxAge, 1<<31)) * time.Second), true
	}
	if v := h.Get("Expires"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil || !t.After(now) {
			return time.Time{}, false
		}
		return t, true
	}
	return now.Add(c.defTTL), c.defTTL > 0
}

// Put stores resp (status 200) for url, reading its body. A response that
// may not be cached is read and dropped, with no error.
func (c *Cache) Put(u string, resp *http.Response, now time.Time) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cache: status %d not cached", resp.StatusCode)
	}
	exp, ok := c.expiry(resp.Header, now)
	if !ok {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if resp.ContentLength > c.max {
		return fmt.Errorf("cache: %d bytes is more than the cache holds (%d)", resp.ContentLength, c.max)
	}
	key := keyOf(u)
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, c.max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > c.max {
		err = fmt.Errorf("more than the cache holds (%d bytes)", c.max)
	}
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("body has %d of %d bytes", n, resp.ContentLength)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cache: %s: %w", u, err)
	}
	h := resp.Header.Clone()
	wire.RemoveHopHeaders(h)
	h.Del("Content-Length")
	m := cacheMeta{URL: u, Status: resp.StatusCode, Header: h, Stored: now, Expires: exp, Size: n}
	data, _ := json.Marshal(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[u]; ok {
		c.size -= old.Meta.Size
		delete(c.entries, u)
		os.Remove(c.metaPath(key))
	}
	if err := os.Rename(f.Name(), c.bodyPath(key)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cache: %w", err)
	}
	// The metadata is written last: it commits the entry.
	tmp := c.metaPath(key) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		c.remove(key)
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp, c.metaPath(key)); err != nil {
		os.Remove(tmp)
		c.remove(key)
		return fmt.Errorf("cache: %w", err)
	}
	c.entries[u] = &cacheEntry{Meta: m, key: key, lastUsed: now}
	c.size += n
	c.evictLocked()
	return nil
}

func (c *Cache) evictLocked() {
	for c.size > c.max {
		var lru *cacheEntry
		for _, e := range c.entries {
			if lru == nil || e.lastUsed.Before(lru.lastUsed) {
				lru = e
			}
		}
		if lru == nil {
			return
		}
		c.dropLocked(lru)
	}
}

func (c *Cache) dropLocked(e *cacheEntry) {
	delete(c.entries, e.Meta.URL)
	c.size -= e.Meta.Size
	c.remove(e.key)
}

// Len and Size report the entries and body bytes held.
func (c *Cache) Len() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.entries) }

// Size reports the body bytes held.
func (c *Cache) Size() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.size }

// Hits is the number of requests the cache has answered.
func (c *Cache) Hits() int64 { return c.hits.Load() }

// Serve answers r from the cache if it holds a fresh copy of r.URL, and
// says whether it did. Range requests are served from the copy too.
func (c *Cache) Serve(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	if strings.Contains(strings.ToLower(r.Header.Get("Cache-Control")), "no-cache") {
		return false
	}
	u := r.URL.String()
	c.mu.Lock()
	e, ok := c.entries[u]
	if ok && !now.Before(e.Meta.Expires) {
		c.dropLocked(e)
		ok = false
	}
	if ok {
		e.lastUsed = now
	}
	var m cacheMeta
	if ok {
		m = e.Meta
	}
	c.mu.Unlock()
	if !ok {
		return false
	}
	f, err := os.Open(c.bodyPath(keyOf(u)))
	if err != nil {
		return false
	}
	defer f.Close()
	for k, vs := range m.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Age", strconv.FormatInt(int64(now.Sub(m.Stored)/time.Second), 10))
	w.Header().Set("Ct-Cache", "hit")
	c.hits.Add(1) // before the body: a reader of the metrics sees it once the app has its response
	http.ServeContent(w, r, "", time.Time{}, f)
	return true
}
