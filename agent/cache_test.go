package agent

import (
	"context"
	"crypto/sha256"
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

func TestCache(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := OpenCache(dir, 1000, time.Minute, t0)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Put("http://a/1", resp200("one", "Cache-Control", "max-age=10", "Content-Type", "text/x-one"), t0))
	must(c.Put("http://a/2", resp200("two"), t0)) // default TTL: a minute
	must(c.Put("http://a/3", resp200("three", "Expires", t0.Add(time.Hour).Format(http.TimeFormat)), t0))
	must(c.Put("http://a/nostore", resp200("x", "Cache-Control", "no-store"), t0))
	must(c.Put("http://a/maxage0", resp200("x", "Cache-Control", "max-age=0"), t0))
	must(c.Put("http://a/expired", resp200("x", "Expires", t0.Add(-time.Hour).Format(http.TimeFormat)), t0))
	if c.Len() != 3 {
		t.Fatalf("%d entries, want 3 (no-store, max-age=0 and expired are not kept)", c.Len())
	}
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
	// Restart: the entries still fresh survive; a corrupt one is dropped.
	os.WriteFile(filepath.Join(dir, keyOf("http://a/2")+".body"), []byte("tw"), 0o600) // truncated body
	os.WriteFile(filepath.Join(dir, "junk.meta"), []byte("{"), 0o600)
	c2, err := OpenCache(dir, 1000, time.Minute, t0.Add(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if c2.Len() != 1 {
		t.Fatalf("after restart %d entries, want 1 (a/3)", c2.Len())
	}
	if _, body, ok := cacheGet(c2, "http://a/3", t0.Add(30*time.Second)); !ok || body != "three" {
		t.Fatalf("after restart: %v %q", ok, body)
	}
	// Size bound: least recently used out first.
	big := strings.Repeat("b", 600)
	must(c2.Put("http://a/big1", resp200(big), t0.Add(31*time.Second)))
	cacheGet(c2, "http://a/3", t0.Add(32*time.Second)) // a/3 used after big1
	must(c2.Put("http://a/big2", resp200(big), t0.Add(33*time.Second)))
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

// Prefetch end to end: ct-server pushes its list when the client connects,
// and a hint fetches one more; the app then gets them from the cache with
// no request to the app-server; the cache survives a client restart.
func TestPrefetch(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *ServerConfig) {
		c.Prefetch = []string{"http://" + up.hostport + "/bytes/100000", "http://" + up.hostport + "/fresh", "http://" + up.hostport + "/nostore"}
	}, up.hostport)
	dir := t.TempDir()
	cache, err := OpenCache(dir, 10<<20, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.Cache = cache })
	waitFor(t, func() bool { return cache.Len() == 2 }, "2 pushed entries")
	if n := up.requests.Load(); n != 3 {
		t.Fatalf("upstream saw %d requests, want 3 (one per prefetch URL)", n)
	}
	resp, body := tc.get(t, up.URL+"/bytes/100000")
	if resp.StatusCode != 200 || resp.Header.Get("Ct-Cache") != "hit" || sha256.Sum256(body) != patternSum(100000) {
		t.Fatalf("cached: %d %q %d bytes", resp.StatusCode, resp.Header.Get("Ct-Cache"), len(body))
	}
	if resp, _ := tc.get(t, up.URL+"/nostore"); resp.Header.Get("Ct-Cache") == "hit" {
		t.Fatal("no-store response served from the cache")
	}
	if up.count("/bytes/100000") != 1 {
		t.Fatal("a prefetched resource was fetched again")
	}
	// A hint.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tc.Prefetch(ctx, up.URL+"/bytes/777"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return cache.Len() == 3 }, "the hinted entry")
	if resp, body := tc.get(t, up.URL+"/bytes/777"); resp.Header.Get("Ct-Cache") != "hit" || len(body) != 777 {
		t.Fatal("hinted resource not served from the cache")
	}
	if err := tc.Prefetch(ctx, "http://10.9.9.9/x"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("hint for a non-allowed upstream: %v", err)
	}
	var sb strings.Builder
	tc.WriteMetrics(&sb)
	for _, want := range []string{"ct_client_cache_hits_total 2", "ct_client_pushes_total 4"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Restart the client with the same directory: the entries are there.
	tc.Close()
	cache2, err := OpenCache(dir, 10<<20, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cache2.Len() != 3 {
		t.Fatalf("after restart: %d entries", cache2.Len())
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	// Long: it ends a test whose event never comes, and must outlast any
	// delay a loaded machine adds to one that does.
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
