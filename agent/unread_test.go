package agent

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestUnreadTunnelsDoNotKillPaths: on fake time over memnet, with
// ct-server's default limits, one app opens 400 CONNECT tunnels at once,
// asks each one that is granted for a large response and never reads:
// their stream windows fill, and its tunnels fill the part of the memory
// budget tunnels may use (the rest are refused: it slows only itself). No
// path may be declared dead for it (liveness comes from the transport, not
// from the tunnels), another app's 5 MB GET arrives intact, and its small
// requests keep their latency (each ≤ 1 s).
func TestUnreadTunnelsDoNotKillPaths(t *testing.T) {
	const tunnels = 400
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		for i := range 2 {
			m.n.SetLink(memPath(i).Addr, 4e6, 256<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		var (
			mu      sync.Mutex
			open    []net.Conn
			granted int
			wg      sync.WaitGroup
		)
		defer func() {
			mu.Lock()
			for _, c := range open {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		}()
		for range tunnels {
			conn, br := m.rawProxy(t)
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			wg.Go(func() {
				fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
				resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
				if err != nil || resp.StatusCode != http.StatusOK {
					return // refused (its share, the budget) or closed at the end
				}
				mu.Lock()
				granted++
				mu.Unlock()
				// Ask for far more than the windows hold; read none of it.
				fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", 64<<20, memApp)
			})
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
		mu.Lock()
		t.Logf("small requests beside %d unread tunnels (%d asked for): median %v, max %v (fake time)", granted, tunnels, lat[len(lat)/2], lat[len(lat)-1])
		if granted < 32 {
			t.Errorf("only %d of %d tunnels granted", granted, tunnels)
		}
		mu.Unlock()
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
