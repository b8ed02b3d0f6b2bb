package agent

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// TestUnreadTunnelsDoNotKillPaths: on fake time over memnet, one app opens
// as many CONNECT tunnels as ct-server allows, asks each for a large
// response and never reads: their stream windows fill. No path may be
// declared dead for it (liveness comes from the transport, not from the
// tunnels), another app's 5 MB GET arrives intact, and its small
// requests keep their latency (each ≤ 1 s).
func TestUnreadTunnelsDoNotKillPaths(t *testing.T) {
	const tunnels = 32
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, func(s *server.Config) { s.Limits.MaxTunnels = tunnels }, nil)
		for i := range 2 {
			m.n.SetLink(memPath(i).Addr, 4e6, 256<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		for i := range tunnels {
			conn, br := m.rawProxy(t)
			defer conn.Close()
			fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("tunnel %d: %v %v", i, resp, err)
			}
			// Ask for far more than the windows hold; read none of it.
			fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", 64<<20, memApp)
		}
		time.Sleep(3 * DefaultStallTimeout) // the windows fill; a starved check would fire now
		const size = 5_000_000
		resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || [32]byte(h.Sum(nil)) != patternSum(size) {
			t.Fatalf("5 MB GET beside unread tunnels: %d bytes, %v, or not intact", n, err)
		}
		var lat []time.Duration
		for range 20 {
			start := time.Now()
			resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, 2000))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, bufio.NewReader(resp.Body))
			resp.Body.Close()
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		t.Logf("small requests beside %d unread tunnels: median %v, max %v (fake time)", tunnels, lat[len(lat)/2], lat[len(lat)-1])
		if lat[len(lat)-1] > time.Second {
			t.Errorf("a small request took %v beside unread tunnels, want ≤ 1 s", lat[len(lat)-1])
		}
		for _, p := range m.c.paths {
			if s, r := p.stalls.Load(), p.reconnects.Load(); s != 0 || r != 0 {
				t.Errorf("path %s: %d stalls, %d reconnects: declared dead for another app's unread tunnels", p.Name, s, r)
			}
		}
	})
}
