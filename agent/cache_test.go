package agent

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/cache"
	"github.com/hetquic/hetquic/agent/server"
)

// Prefetch end to end: ct-server pushes its list when the client connects,
// and a hint fetches one more; the app then gets them from the cache with
// no request to the app-server; the cache survives a client restart.
func TestPrefetch(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *server.Config) {
		c.Prefetch = []string{"http://" + up.hostport + "/bytes/100000", "http://" + up.hostport + "/fresh", "http://" + up.hostport + "/nostore"}
	}, up.hostport)
	dir := t.TempDir()
	pc, err := cache.OpenCache(dir, 10<<20, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.Cache = pc })
	waitFor(t, func() bool { return pc.Len() == 2 }, "2 pushed entries")
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
	waitFor(t, func() bool { return pc.Len() == 3 }, "the hinted entry")
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
	cache2, err := cache.OpenCache(dir, 10<<20, time.Hour, time.Now())
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
