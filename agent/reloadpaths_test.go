package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// TestReloadPaths, on memnet and fake time: removing the path a 4 MB
// download rides moves it to the other path, intact; the removed path
// takes no more work and its connection ends; adding paths (a new one, and
// the removed one again) dials them; a bad list changes nothing.
func TestReloadPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, func(c *ClientConfig) { c.StripeMin = -1 })
		for i := range 3 {
			m.n.SetLink(memPath(i).Addr, 1e6, 64<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		busy, other := removeBusyPath(t, m)
		checkBadReloads(t, m, other)
		checkReadd(t, m, other, busy)
	})
}

// removeBusyPath starts a 4 MB download, removes the path carrying it
// mid-flight, and checks that the download ends intact on the other path
// and that the removed path takes no more work. It returns the removed
// path and the kept one.
func removeBusyPath(t *testing.T, m *memAgent) (busy, other *path) {
	t.Helper()
	const size = 4 << 20
	done := make(chan error, 1)
	go func() { done <- getIntact(m, size) }()
	time.Sleep(time.Second)
	paths := m.c.pathList()
	busy, other = paths[0], paths[1]
	if other.bytes.Load() > busy.bytes.Load() {
		busy, other = other, busy
	}
	if n := busy.bytes.Load(); n == 0 || n >= size {
		t.Fatalf("the removed path had carried %d of %d bytes: not in flight", n, size)
	}
	before := other.bytes.Load()
	if err := m.c.ReloadPaths([]LocalPath{other.LocalPath}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("download across the removal: %v", err)
	}
	if other.bytes.Load()-before < size/4 {
		t.Fatalf("the kept path carried %d bytes after the removal", other.bytes.Load()-before)
	}
	synctest.Wait()
	if !busy.retired.Load() || busy.current() != nil || m.c.Ready() != 1 {
		t.Fatalf("removed path: retired %v, connected %v; %d paths ready", busy.retired.Load(), busy.current() != nil, m.c.Ready())
	}
	reqs := busy.requests.Load()
	if err := getIntact(m, 100_000); err != nil || busy.requests.Load() != reqs {
		t.Fatalf("a request after the removal: %v; the removed path took %d", err, busy.requests.Load()-reqs)
	}
	return busy, other
}

// checkBadReloads: an empty list, a duplicate address and a pin to a path
// not in the list are refused, and nothing changes.
func checkBadReloads(t *testing.T, m *memAgent, other *path) {
	t.Helper()
	for _, bad := range [][]LocalPath{nil, {other.LocalPath, memPath(2), {Name: memPath(2).Name, Addr: memPath(1).Addr}}} {
		if err := m.c.ReloadPaths(bad); err == nil {
			t.Fatalf("%v: accepted", bad)
		}
	}
	if err := m.c.ReloadAll([]LocalPath{other.LocalPath, memPath(2)}, ClientPolicy{Token: testToken, AppPaths: map[string]string{"x": "nope"}}); err == nil {
		t.Fatal("a pin to a path not in the list: accepted")
	}
	if n := len(m.c.pathList()); n != 2 {
		t.Fatalf("%d paths after bad reloads, want 2", n)
	}
}

// checkReadd adds a new path and the removed one again: both are dialled,
// the removed one as a new path.
func checkReadd(t *testing.T, m *memAgent, other, busy *path) {
	t.Helper()
	if err := m.c.ReloadAll([]LocalPath{other.LocalPath, memPath(2), busy.LocalPath}, ClientPolicy{Token: testToken}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.c.WaitReady(ctx, 3); err != nil {
		t.Fatalf("added paths not up: %v (%d ready)", err, m.c.Ready())
	}
	if names, want := activeNames(m.c), fmt.Sprintf("%s m2 %s", other.Name, busy.Name); names != want || len(m.c.pathList()) != 4 {
		t.Fatalf("active paths %q, want %q (the removed one again, as a new path); %d in all", names, want, len(m.c.pathList()))
	}
	if err := getIntact(m, 100_000); err != nil {
		t.Fatal(err)
	}
}

// activeNames lists the names of c's paths that are not retired.
func activeNames(c *Client) string {
	s := ""
	for _, p := range c.activePaths() {
		if s != "" {
			s += " "
		}
		s += p.Name
	}
	return s
}

// getIntact GETs size bytes from the app-server through m's proxy and
// checks every byte.
func getIntact(m *memAgent, size int64) error {
	resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	h := sha256.New()
	got, err := io.Copy(h, resp.Body)
	if err != nil || got != size || [32]byte(h.Sum(nil)) != patternSum(size) {
		return fmt.Errorf("%d of %d bytes (%v), or not intact", got, size, err)
	}
	return nil
}

// mustGetIntact is getIntact that fails the test.
func mustGetIntact(t *testing.T, m *memAgent, size int64) {
	t.Helper()
	if err := getIntact(m, size); err != nil {
		t.Fatal(err)
	}
}

// TestSamePath: a path named by interface is the same whatever its
// address now; one given by address is the same only in every field.
func TestSamePath(t *testing.T) {
	a := LocalPath{Name: "wifi", Addr: netip.MustParseAddr("10.0.0.2"), Iface: "wlan0"}
	moved := a
	moved.Addr = netip.MustParseAddr("10.0.0.9")
	metered := a
	metered.Role = RoleMetered
	byAddr := LocalPath{Name: "lte", Addr: netip.MustParseAddr("10.1.0.2")}
	byAddrMoved := byAddr
	byAddrMoved.Addr = netip.MustParseAddr("10.1.0.3")
	for _, c := range []struct {
		a, b LocalPath
		want bool
	}{
		{a, a, true}, {a, moved, true}, {a, metered, false}, {byAddr, byAddr, true}, {byAddr, byAddrMoved, false},
		{a, LocalPath{Name: "wifi2", Addr: a.Addr, Iface: "wlan0"}, false},
	} {
		if got := samePath(c.a, c.b); got != c.want {
			t.Errorf("samePath(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
