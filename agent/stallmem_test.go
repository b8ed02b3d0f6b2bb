package agent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestMigrateOnStall on the fake network and fake time: two paths of
// 2 MB/s (memnet links, 64 KiB queues), a path black-holed a quarter into
// a 4 MB response; the stall is decided and the response resumed on the
// other path within 1.5 × StallTimeout plus round trips of fake time (a
// bound no loaded machine can stretch), and the app gets it intact.
func TestMigrateOnStallMem(t *testing.T) {
	for _, stripe := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripe=%v", stripe), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := startMemAgent(t, 2, nil, func(c *ClientConfig) {
					if !stripe {
						c.StripeMin = -1
					}
				})
				for i := range 2 {
					m.n.SetLink(memPath(i).Addr, 2e6, 64<<10)
				}
				m.n.SetDelay(memCTServer.Addr(), 5*time.Millisecond)
				const size = 4_000_000
				gap := readCutting(t, m, size, stripe)
				resume := time.Duration(m.c.resumeNanos.Load())
				t.Logf("resume gap %v, longest gap seen by the app %v, %d pieces requested again (fake time)", resume, gap, m.c.reinjections.Load())
				// A stripe may get the cut path's piece again on the
				// other path before the stall is decided (reinjection):
				// then nothing migrates, and the app's gap is shorter.
				recovered := m.c.migrations.Load() >= 1 && resume > 0
				if stripe {
					recovered = recovered || m.c.reinjections.Load() >= 1
				}
				if !recovered {
					t.Fatalf("%d migrations, resume gap %v, %d reinjections: the cut was not seen", m.c.migrations.Load(), resume, m.c.reinjections.Load())
				}
				// StallTimeout after the last byte (two quiet halves), and
				// a half more for a piece whose stream began while another
				// stream of the path still got bytes; plus round trips.
				if bound := DefaultStallTimeout*3/2 + 200*time.Millisecond; resume > bound || gap > bound {
					t.Fatalf("resumed %v after the last byte, app gap %v, want both ≤ %v", resume, gap, bound)
				}
			})
		})
	}
}

// readCutting GETs size bytes through m and drops the path carrying them
// once the response is under way (at once for a stripe, which fetches ahead
// of the app; a quarter in otherwise). It checks the response is 200 and
// intact and returns the longest gap between reads.
func readCutting(t *testing.T, m *memAgent, size int64, stripe bool) (gap time.Duration) {
	var got int64
	resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	buf := make([]byte, 32<<10)
	last := time.Now()
	cut := false
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			gap, last = max(gap, time.Since(last)), time.Now()
			h.Write(buf[:k])
			got += int64(k)
			if !cut && (got > size/4 || stripe) {
				cut = true
				m.n.SetDrop(busyPath(t, m.c).Addr, true)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", got, err)
		}
	}
	if resp.StatusCode != http.StatusOK || got != size || [32]byte(h.Sum(nil)) != patternSum(size) {
		t.Fatalf("status %d, %d of %d bytes, or not intact", resp.StatusCode, got, size)
	}
	return gap
}
