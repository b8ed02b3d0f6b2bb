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

// TestFarFastPathAloneReachesRate: on fake time over memnet, a download
// on one fast path far away (100 Mbit/s at 50, 120 and 200 ms round
// trips) runs at ≥ farRateBar of the path's rate once its slow start is
// over (the second half of farRateSize). One stream carries it, and a
// stream moves at most its receive window per round trip: ct-client's
// fixed 1 MiB window held it to 8.7 MB/s of 12.5 at 120 ms (0.70) and to
// 5.2 at 200 ms (0.42); at 50 ms the window covered the path already.
func TestFarFastPathAloneReachesRate(t *testing.T) {
	if raceEnabled {
		t.Skip("a performance shape that the race detector distorts (raceEnabled); .ci/run runs it without -race")
	}
	const rate = 12.5e6 // 100 Mbit/s
	for _, rtt := range []time.Duration{50 * time.Millisecond, 120 * time.Millisecond, 200 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			// Round trips are a path's delay and mixServerDelay.
			mix := []mixPath{{rate, rtt - mixServerDelay, 0}}
			got := secondHalfRate(t, mix, farRateSize)
			t.Logf("second half at %.2f MB/s, %.3f of the path's rate", got/1e6, got/rate)
			if got < farRateBar*rate {
				t.Errorf("second half at %.2f MB/s < %.2f × the path's %.2f", got/1e6, farRateBar, rate/1e6)
			}
		})
	}
}

// TestFarFastPathAloneReachesRate's object and bar: 24 MB is 1.9 s at
// 100 Mbit/s, and its first half (12 MB) holds the slow start of the
// longest round trip (about 6 round trips, 1.2 s and 5 MB at 200 ms), so
// the second half measures the rate the path holds. The bar is the
// issue's ("one path through ct reaches ≥ 0.9 × its rate").
const (
	farRateSize = 24 << 20
	farRateBar  = 0.9
)

// secondHalfRate downloads size bytes through an agent on memnet whose
// paths are mix (unstriped: one stream) and returns the rate, in bytes per
// second of fake time, at which the app read the second half of the body;
// the body must arrive intact.
func secondHalfRate(t *testing.T, mix []mixPath, size int64) float64 {
	t.Helper()
	var rate float64
	synctest.Test(t, func(t *testing.T) {
		m := startShapedAgent(t, len(mix), shapeMix(mix, rttQueue), nil, func(c *ClientConfig) { c.StripeMin = -1 })
		resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		h := sha256.New()
		first, err := io.CopyN(h, resp.Body, size/2)
		if err != nil {
			t.Fatalf("first half: %d of %d bytes: %v", first, size/2, err)
		}
		half := time.Now()
		rest, err := io.Copy(h, resp.Body)
		if err != nil || first+rest != size || [32]byte(h.Sum(nil)) != patternSum(size) {
			t.Fatalf("%d of %d bytes (%v), or not intact", first+rest, size, err)
		}
		rate = float64(rest) / time.Since(half).Seconds()
	})
	return rate
}

// TestTunnelResumesFromGrownWindow: on fake time over memnet, a CONNECT
// tunnel whose app reads as fast as a far fast path delivers (its stream's
// window grown towards wire.DownWindow) resumes intact on the other path
// when its own dies mid-transfer: every byte ct-server may have sent and
// the app not yet read is in ct-server's replay buffer. With the replay
// sized for a 1 MiB window (wire.ReplayBytes), the resume found the bytes
// it needed gone and the app's connection was reset.
func TestTunnelResumesFromGrownWindow(t *testing.T) {
	const size = 24 << 20
	far := mixPath{12.5e6, 115 * time.Millisecond, 0} // 100 Mbit/s, 120 ms round trip
	synctest.Test(t, func(t *testing.T) {
		m := startShapedAgent(t, 2, shapeMix([]mixPath{far, far}, rttQueue), nil, nil)
		conn, br := m.rawProxy(t)
		defer conn.Close()
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", size, memApp)
		resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET through the tunnel: %v %v", resp, err)
		}
		h := sha256.New()
		first, err := io.CopyN(h, resp.Body, size/3) // past the window's growth, the path full
		if err != nil {
			t.Fatalf("before the cut: %d bytes: %v", first, err)
		}
		victim := busyPath(t, m.c)
		m.n.SetDrop(victim.Addr, true)
		rest, err := io.Copy(h, resp.Body)
		if err != nil || first+rest != size || [32]byte(h.Sum(nil)) != patternSum(size) {
			t.Fatalf("%d of %d bytes (%v), or not intact", first+rest, size, err)
		}
		if m.c.migrations.Load() < 1 {
			t.Fatal("no tunnel migration")
		}
	})
}
