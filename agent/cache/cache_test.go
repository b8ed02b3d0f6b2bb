package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func resp200(body string, hdr ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &http.Response{StatusCode: 200, Header: h, ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body))}
}

func cacheGet(c *Cache, u string, now time.Time, hdr ...string) (int, string, bool) {
	req := httptest.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	if !c.Serve(rec, req, now) {
		return 0, "", false
	}
	return rec.Code, rec.Body.String(), true
}

// t0 is the tests' start of time.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// filledCache opens a cache of 1000 bytes in dir and puts six responses at
// t0, of which three may be kept.
func filledCache(t *testing.T, dir string) *Cache {
	c, err := OpenCache(dir, 1000, time.Minute, t0)
	must(t, err)
	must(t, c.Put("http://a/1", resp200("one", "Cache-Control", "max-age=10", "Content-Type", "text/x-one"), t0))
	must(t, c.Put("http://a/2", resp200("two"), t0)) // default TTL: a minute
	must(t, c.Put("http://a/3", resp200("three", "Expires", t0.Add(time.Hour).Format(http.TimeFormat)), t0))
	must(t, c.Put("http://a/nostore", resp200("x", "Cache-Control", "no-store"), t0))
	must(t, c.Put("http://a/maxage0", resp200("x", "Cache-Control", "max-age=0"), t0))
	must(t, c.Put("http://a/expired", resp200("x", "Expires", t0.Add(-time.Hour).Format(http.TimeFormat)), t0))
	if c.Len() != 3 {
		t.Fatalf("%d entries, want 3 (no-store, max-age=0 and expired are not kept)", c.Len())
	}
	return c
}

func TestCache(t *testing.T) {
	c := filledCache(t, t.TempDir())
	if code, body, ok := cacheGet(c, "http://a/1", t0.Add(5*time.Second)); !ok || code != 200 || body != "one" {
		t.Fatalf("fresh: %v %d %q", ok, code, body)
	}
	if code, body, ok := cacheGet(c, "http://a/3", t0, "Range", "bytes=1-2"); !ok || code != 206 || body != "hr" {
		t.Fatalf("range from cache: %v %d %q", ok, code, body)
	}
	if _, _, ok := cacheGet(c, "http://a/1", t0, "Cache-Control", "no-cache"); ok {
		t.Fatal("served despite the request's no-cache")
	}
	if _, _, ok := cacheGet(c, "http://a/1", t0.Add(11*time.Second)); ok {
		t.Fatal("served after max-age")
	}
}

// restartedCache is filledCache reopened at t0+20s with a/2's body
// truncated and a corrupt entry beside it: only a/3 survives.
func restartedCache(t *testing.T, dir string) *Cache {
	filledCache(t, dir)
	os.WriteFile(filepath.Join(dir, keyOf("http://a/2")+".body"), []byte("tw"), 0o600) // truncated body
	os.WriteFile(filepath.Join(dir, "junk.meta"), []byte("{"), 0o600)
	c2, err := OpenCache(dir, 1000, time.Minute, t0.Add(20*time.Second))
	must(t, err)
	if c2.Len() != 1 {
		t.Fatalf("after restart %d entries, want 1 (a/3)", c2.Len())
	}
	return c2
}

// TestCacheRestart: the entries still fresh survive a restart; a corrupt
// one is dropped.
func TestCacheRestart(t *testing.T) {
	c2 := restartedCache(t, t.TempDir())
	if _, body, ok := cacheGet(c2, "http://a/3", t0.Add(30*time.Second)); !ok || body != "three" {
		t.Fatalf("after restart: %v %q", ok, body)
	}
}

// TestCacheEviction: the size bound evicts the least recently used entry
// first, refuses an entry larger than the cache, and leaves no stray file.
func TestCacheEviction(t *testing.T) {
	dir := t.TempDir()
	c2 := restartedCache(t, dir)
	big := strings.Repeat("b", 600)
	must(t, c2.Put("http://a/big1", resp200(big), t0.Add(31*time.Second)))
	cacheGet(c2, "http://a/3", t0.Add(32*time.Second)) // a/3 used after big1
	must(t, c2.Put("http://a/big2", resp200(big), t0.Add(33*time.Second)))
	if c2.Size() > 1000 {
		t.Fatalf("size %d over the bound", c2.Size())
	}
	if _, _, ok := cacheGet(c2, "http://a/big1", t0.Add(34*time.Second)); ok {
		t.Fatal("the least recently used entry was kept")
	}
	if _, _, ok := cacheGet(c2, "http://a/3", t0.Add(34*time.Second)); !ok {
		t.Fatal("a recently used entry was evicted")
	}
	if err := c2.Put("http://a/huge", resp200(strings.Repeat("h", 2000)), t0); err == nil {
		t.Fatal("an entry larger than the cache was accepted")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2*c2.Len() {
		t.Fatalf("%d files for %d entries: %v", len(files), c2.Len(), files)
	}
}
