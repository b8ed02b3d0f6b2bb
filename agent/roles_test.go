package agent

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestParseLocalPathNames: interfaces by name (resolved through an
// injected table), roles, and what is refused.
func TestParseLocalPathNames(t *testing.T) {
	saved := interfaceAddrs
	// A cleanup, not a defer: cleanups run after the function returns and in
	// reverse order, so the clients started below are closed (their interface
	// watchers read interfaceAddrs) before it is restored.
	t.Cleanup(func() { interfaceAddrs = saved })
	table := map[string][]netip.Addr{
		"wlan0": {netip.MustParseAddr("fe80::1"), netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("192.168.1.23")},
		"wwan0": {netip.MustParseAddr("fe80::2"), netip.MustParseAddr("2001:db8::7")},
		"lo":    {netip.MustParseAddr("127.0.0.1")},
		"down":  {netip.MustParseAddr("fe80::3")},
	}
	interfaceAddrs = func(name string) ([]netip.Addr, bool, error) {
		a, ok := table[name]
		if !ok {
			return nil, false, errors.New("no such interface")
		}
		return a, name == "lo", nil
	}
	for in, want := range map[string]LocalPath{
		"wifi=wlan0":               {Name: "wifi", Addr: netip.MustParseAddr("192.168.1.23"), Iface: "wlan0"},
		"lte=wwan0/metered":        {Name: "lte", Addr: netip.MustParseAddr("2001:db8::7"), Iface: "wwan0", Role: RoleMetered},
		"sat=10.0.0.9/backup":      {Name: "sat", Addr: netip.MustParseAddr("10.0.0.9"), Role: RoleBackup},
		"loop=lo":                  {Name: "loop", Addr: netip.MustParseAddr("127.0.0.1"), Iface: "lo"},
		"127.0.0.2":                {Name: "127.0.0.2", Addr: netip.MustParseAddr("127.0.0.2")},
		"wifi=192.168.1.23/backup": {Name: "wifi", Addr: netip.MustParseAddr("192.168.1.23"), Role: RoleBackup},
		"wlan0":                    {Name: "wlan0", Addr: netip.MustParseAddr("192.168.1.23"), Iface: "wlan0"},
	} {
		got, err := ParseLocalPath(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"wifi=eth9", "wifi=down", "wifi=wlan0/cheap", "=wlan0", "wifi=wlan0/"} {
		if got, err := ParseLocalPath(bad); err == nil {
			t.Errorf("%q accepted: %+v", bad, got)
		}
	}
}

// TestPathRoles on sockets: with a backup path, requests stay on the
// primary while it works and go to the backup once the primary's
// connection is gone (and cannot come back); a metered path gets no small
// request and a large download is striped with it counted as a path.
// When each path is judged dead (a stall) and whether the metered path's
// pieces would shorten a download (its measured rate) ride on timing: a
// loaded machine paused the primary past DefaultStallTimeout (a false
// stall) or made the metered path look too slow to take a piece ("the
// metered path took no piece" at load 15). TestPathRolesMem checks both on
// fake time.
func TestPathRoles(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.Paths[1].Role = RoleBackup })
	for range 6 {
		if resp, _ := tc.get(t, up.URL+"/bytes/20000"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if n := tc.paths[1].requests.Load(); n != 0 {
		t.Fatalf("backup path carried %d requests while the primary worked", n)
	}
	// The primary dies: black-holed, so it cannot redial, and its
	// connection closed here rather than judged dead by a stall.
	ts.pc.setDrop(tc.paths[0].Addr, true)
	tc.paths[0].current().CloseWithError(0, "test kills the primary")
	resp, body := tc.get(t, up.URL+"/bytes/300000")
	if resp.StatusCode != 200 || len(body) != 300000 || tc.paths[1].requests.Load() == 0 {
		t.Fatalf("with the primary dead: status %d, %d bytes, backup requests %d", resp.StatusCode, len(body), tc.paths[1].requests.Load())
	}

	ts.pc.setDrop(tc.paths[0].Addr, false)
	tc.Close()
	tm := startClient(t, ts, 2, true, func(c *ClientConfig) { c.Paths[1].Role = RoleMetered })
	for range 4 {
		tm.get(t, up.URL+"/bytes/20000")
	}
	if n := tm.paths[1].requests.Load(); n != 0 {
		t.Fatalf("metered path carried %d small requests while the primary worked", n)
	}
	resp, body = tm.get(t, up.URL+"/bytes/8000000")
	if resp.StatusCode != 200 || len(body) != 8000000 || sha256.Sum256(body) != patternSum(8000000) {
		t.Fatalf("striped: status %d, %d bytes, or not intact", resp.StatusCode, len(body))
	}
	if n := tm.stripes.Load(); n != 1 {
		t.Fatalf("%d striped downloads, want 1: the metered path counts as a second path", n)
	}
	t.Logf("the metered path carried %d of the striped download's 8000000 bytes", tm.paths[1].bytes.Load())
}

// TestPathRolesMem: path roles on memnet, two 2 MB/s paths, on fake time, where a loaded machine can neither stall a path nor slow one down.
// A backup path carries nothing while the primary works, and the
// primary's requests once it goes silent (judged dead by a stall); a
// metered path gets no small request but its share of a striped download,
// which its pieces shorten.
func TestPathRolesMem(t *testing.T) {
	t.Run("backup", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startRoleMem(t, RoleBackup)
			getMem(t, m, 20000, 6)
			if n := m.c.paths[1].requests.Load(); n != 0 {
				t.Fatalf("backup path carried %d requests while the primary worked", n)
			}
			m.n.SetDrop(memPath(0).Addr, true)
			getMem(t, m, 300000, 1)
			if n := m.c.paths[1].requests.Load(); n == 0 {
				t.Fatal("with the primary silent, the backup path carried no request")
			}
		})
	})
	t.Run("metered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startRoleMem(t, RoleMetered)
			getMem(t, m, 20000, 4)
			if n := m.c.paths[1].requests.Load(); n != 0 {
				t.Fatalf("metered path carried %d small requests while the primary worked", n)
			}
			const size = 4_000_000
			getMem(t, m, size, 1)
			got := m.c.paths[1].bytes.Load()
			t.Logf("the metered path carried %d of the striped download's %d bytes (fake time)", got, size)
			if m.c.stripes.Load() != 1 || got < size/4 {
				t.Fatalf("%d striped, the metered path carried %d of %d bytes, want at least a quarter", m.c.stripes.Load(), got, size)
			}
		})
	})
}

// startRoleMem starts a memAgent with two 2 MB/s paths, the second of
// role and the nearer (the primary sends 20 ms later), so a path choice
// that ignored the role would favour it; it must run inside the synctest
// bubble.
func startRoleMem(t *testing.T, role string) *memAgent {
	mix := []mixPath{{2e6, 20 * time.Millisecond, 0}, {2e6, 0, 0}}
	return startShapedAgent(t, 2, shapeMix(mix, func(mixPath) int { return 64 << 10 }), nil, func(c *ClientConfig) { c.Paths[1].Role = role })
}

// getMem GETs /bytes/size through m times times and checks each response
// is 200 and intact.
func getMem(t *testing.T, m *memAgent, size int64, times int) {
	t.Helper()
	for range times {
		resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || sha256.Sum256(body) != patternSum(size) {
			t.Fatalf("GET %d bytes: status %d, %d bytes, %v", size, resp.StatusCode, len(body), err)
		}
	}
}

// TestInterfaceFollows: a path given by interface name follows its
// address: moved to another address, it reconnects from there (and
// requests keep working); with the interface gone it is down; back, it
// is up again.
func TestInterfaceFollows(t *testing.T) {
	var mu sync.Mutex
	addr := netip.MustParseAddr("127.0.0.21")
	gone := false
	saved := interfaceAddrs
	// A cleanup, not a defer: cleanups run after the function returns and in
	// reverse order, so the clients started below are closed (their interface
	// watchers read interfaceAddrs) before it is restored.
	t.Cleanup(func() { interfaceAddrs = saved })
	interfaceAddrs = func(name string) ([]netip.Addr, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if name != "wlan9" || gone {
			return nil, false, errors.New("no such interface")
		}
		return []netip.Addr{addr}, true, nil
	}
	set := func(a string, g bool) {
		mu.Lock()
		addr, gone = netip.MustParseAddr(a), g
		mu.Unlock()
	}
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	lp, err := ParseLocalPath("wifi=wlan9")
	if err != nil {
		t.Fatal(err)
	}
	tc := startClient(t, ts, 1, true, func(c *ClientConfig) {
		c.Paths = []LocalPath{lp}
		c.InterfacePoll = 50 * time.Millisecond
	})
	localIs := func(want string) bool {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if conn := tc.paths[0].current(); conn != nil && strings.HasPrefix(conn.LocalAddr().String(), want+":") {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}
	if !localIs("127.0.0.21") {
		t.Fatal("path not up from 127.0.0.21")
	}
	set("127.0.0.23", false)
	if !localIs("127.0.0.23") {
		t.Fatal("path did not move to the interface's new address 127.0.0.23")
	}
	if resp, body := tc.get(t, up.URL+"/bytes/100000"); resp.StatusCode != 200 || len(body) != 100000 {
		t.Fatalf("after the move: %d, %d bytes", resp.StatusCode, len(body))
	}
	set("127.0.0.23", true)
	deadline := time.Now().Add(10 * time.Second)
	for tc.Ready() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if tc.Ready() != 0 {
		t.Fatal("path still up with its interface gone")
	}
	set("127.0.0.24", false)
	if !localIs("127.0.0.24") {
		t.Fatal("path not back up when its interface came back")
	}
}

// TestAppPaths: an app pinned to a path (AppPaths) has its requests,
// striped ones included, on that path; another app uses both.
func TestAppPaths(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) {
		c.AppRule = AppRule{Kind: "header", Header: "X-App"}
		c.AppPaths = map[string]string{"video": "p1"}
	})
	for range 3 {
		tc.get(t, up.URL+"/bytes/20000", "X-App", "video")
	}
	resp, body := tc.get(t, up.URL+"/bytes/6000000", "X-App", "video")
	if resp.StatusCode != 200 || len(body) != 6000000 {
		t.Fatalf("pinned app: %d, %d bytes", resp.StatusCode, len(body))
	}
	if n := tc.paths[0].requests.Load(); n != 0 {
		t.Fatalf("the app pinned to p1 sent %d requests over p0", n)
	}
}
