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

	"github.com/quic-go/quic-go"
)

// TestUnreadTunnelsDoNotKillPaths: on fake time over memnet, with
// ct-server's default limits, one app opens 400 CONNECT tunnels at once,
// asks each one that is granted for a large response and never reads:
// their stream windows fill, and its tunnels fill the part of the memory
// budget tunnels may use (the rest are refused: it slows only itself).
// The test checks that the windows did fill, so that the tunnels' path
// then carries nothing and its liveness rests on the transport probe
// alone (watchTunnels). No path may be declared dead for it (liveness
// comes from the transport, not from the tunnels), another app's 5 MB GET
// arrives intact, and its small requests keep their latency (each ≤ 1 s).
//
// A stall was once counted here in CI (under -race on a loaded machine;
// not reproduced in 101 runs since, alone or loaded). The flood cannot
// make a live path look silent; what could count one is the striped GET
// giving up a piece just as its leg started, which counted as a stall of
// the piece's path until TestGivenUpRequestIsNoStall's fix.
// unreadWindow is the tunnels' stream receive window in
// TestUnreadTunnelsDoNotKillPaths: quic-go's window grows only as the app
// reads, so an unread tunnel holds this much. With ct-client's default
// (512 KiB) the tunnels' 168 MiB took 42 s at the test's 4 MB/s, longer
// than the test, and the tunnels' path was never quiet: the case the test
// is about (full windows, a silent path) did not happen.
const unreadWindow = 64 << 10

// unreadFill is how long the tunnels' windows take to fill: 336 tunnels
// (the most the budget admits) × unreadWindow at 4 MB/s is 5.5 s; the
// rest is margin for the CONNECTs and the tunnels' requests.
const unreadFill = 8 * time.Second

func TestUnreadTunnelsDoNotKillPaths(t *testing.T) {
	const tunnels = 400
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, func(c *ClientConfig) {
			c.QUIC = &quic.Config{InitialStreamReceiveWindow: unreadWindow}
		})
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
		time.Sleep(unreadFill)
		quietTunnelPaths(t, m.c) // the windows are full; a starved check would fire now
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

// quietBytes is what a path with full windows may still receive over
// quietSpan: acknowledgements of the transport probes and keep-alives, far
// below one window (a tunnel still filling would send that much).
const (
	quietBytes = 16 << 10
	quietSpan  = 3 * DefaultStallTimeout
)

// quietTunnelPaths fails t unless every path that carries tunnels stays
// (nearly) silent over quietSpan: its tunnels' windows are full, and a
// liveness check that listened to the tunnels would judge it dead now.
func quietTunnelPaths(t *testing.T, c *Client) {
	t.Helper()
	type mark struct {
		p     *path
		bytes uint64
	}
	var marks []mark
	for _, p := range c.pathList() {
		if conn := p.current(); conn != nil && p.tunnels.Load() > 0 {
			marks = append(marks, mark{p, conn.ConnectionStats().BytesReceived})
		}
	}
	if len(marks) == 0 {
		t.Fatal("no path carries a tunnel: the test shows nothing")
	}
	time.Sleep(quietSpan)
	for _, k := range marks {
		conn := k.p.current()
		if conn == nil {
			continue // lost: the stall check below reports it
		}
		if got := conn.ConnectionStats().BytesReceived - k.bytes; got > quietBytes {
			t.Fatalf("path %s received %d bytes in %v: its tunnels' windows are not full, the test shows nothing", k.p.Name, got, quietSpan)
		}
	}
}
