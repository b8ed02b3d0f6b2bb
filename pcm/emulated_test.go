package pcm

import (
	"bytes"
	"context"
	"crypto/tls"
	"math"
	"net"
	"testing"
	"time"

	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/scenario"
)

// emulated starts an origin behind hetquic's emulator (the UDP relay) for
// the given paths and dials a client over them.
func emulated(t *testing.T, paths []scenario.Path, cfg Config) (*Client, *udprelay.Relay) {
	t.Helper()
	srv := startOrigin(t)
	sc := &scenario.Scenario{Name: "t", Paths: paths}
	relay, err := udprelay.Loopback(sc, srv.conn.LocalAddr().(*net.UDPAddr).AddrPort(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	for i, a := range relay.PathAddrs() {
		cfg.Paths = append(cfg.Paths, LocalPath{Name: paths[i].Name, Addr: a})
	}
	cfg.Server, cfg.ServerName, cfg.TLS = relay.Addr().String(), "localhost", &tls.Config{RootCAs: srv.pool.RootCAs}
	return dialConfig(t, cfg), relay
}

func symmetric(name string, delayMs float64) scenario.Path {
	l := scenario.Link{DelayMs: delayMs}
	return scenario.Path{Name: name, Up: l, Down: l}
}

// noFalseStalls is the stall timeout of the tests that measure TCTs, not
// stalls: under -race on a loaded 2-core machine a 1000-byte response once
// took 1.9 s, the default 1 s timeout called the path dead, and the
// requests that followed went to another path.
const noFalseStalls = 10 * time.Second

// A small request's TCT is the emulated round trip plus processing, on each
// path: never less than the round trip (every request: load only adds),
// and well below the other path's (the best of the requests: a loaded CI
// machine delays some of them by hundreds of ms).
func TestTCTMatchesEmulatedDelay(t *testing.T) {
	c, _ := emulated(t, []scenario.Path{symmetric("near", 10), symmetric("far", 40)}, Config{StallTimeout: noFalseStalls})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		path         int
		rttMs, maxMs float64
	}{{0, 20, 50}, {1, 80, 140}} {
		c.GetOn(ctx, tc.path, "/bytes/10", nil) // move there first
		best := math.Inf(1)
		for range 5 {
			res, err := c.GetOn(ctx, tc.path, "/bytes/1000", nil)
			if err != nil {
				t.Fatal(err)
			}
			ms := float64(res.TCT()) / float64(time.Millisecond)
			if res.Path != tc.path || ms < tc.rttMs {
				t.Errorf("path %d: TCT %.2f ms, want path %d and at least %.0f ms", res.Path, ms, tc.path, tc.rttMs)
			}
			best = min(best, ms)
		}
		if best > tc.maxMs {
			t.Errorf("path %d: best TCT of 5 %.2f ms, want at most %.0f ms", tc.path, best, tc.maxMs)
		}
	}
}

// An outage event on the active path mid-response: the response completes
// over the other path, every byte once. The stall timeout is 1 s, not the
// 300 ms this test once used: under -race on a loaded 2-core machine the
// surviving path's response paused for 316 ms, was declared stalled too,
// and the download failed with both paths "down".
func TestFailoverOnOutageEvent(t *testing.T) {
	c, relay := emulated(t, []scenario.Path{symmetric("a", 5), symmetric("b", 5)},
		Config{StallTimeout: time.Second, ProbeTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range []int{1, 0} {
		if _, err := c.GetOn(ctx, p, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
	}
	const size = 4 << 20
	body := &cutWriter{after: 1 << 20, cut: func() { relay.Engine().Outage("a", time.Minute) }}
	res, err := c.GetOn(ctx, 0, "/bytes/4194304", body)
	if err != nil {
		t.Fatal(err)
	}
	checkPattern(t, body.buf.Bytes(), size)
	if res.Path != 1 || res.Failovers == 0 {
		t.Errorf("finished on path %d after %d failovers", res.Path, res.Failovers)
	}
	var got bytes.Buffer
	if _, err := c.GetOn(ctx, 0, "/bytes/100", &got); err != nil || got.Len() != 100 {
		t.Errorf("request after the outage: %v (%d bytes)", err, got.Len())
	}
}

// Every request is measured on its own path, also the first after a switch:
// without a fresh validation the server would answer on the old path for a
// round trip (a request on a 100 ms path measured 56 ms after a 10 ms one,
// and one on the 10 ms path 56 ms after the 100 ms one). The checks need no
// bound on the host's timing:
//   - each request is reported on the path it asked for, or (switched) on
//     the one it left on before quic-go applied the switch (moveWatch);
//   - the server follows: a response that came back on another path than
//     its request's (Result.Carrier, counted from the packets' tuples) is
//     what the bug does to every switch to a path validated before (10 of
//     16 requests with FastSwitch, which skips that validation); a loaded
//     host lets a few through even with it (quic-go's server moves only
//     to a path it has validated itself, and answers a request that
//     arrives before on the old path; pcm gives those no sample, see
//     credit), so the test allows unfollowedMax;
//   - a response the server sent on its request's path took at least that
//     path's round trip (load only adds). An unfollowed one does not: up
//     the 100 ms path, down a 10 ms one is 55 ms. This check found, rarely
//     and under load, a carrier counted from the bytes of every request
//     stream: the server's re-send of an earlier unfollowed response on
//     the new path outweighed the next response's own bytes on the old
//     one, so that response read followed. The carrier ledger now counts
//     each byte of a request stream once (streamEnds;
//     TestCarrierIgnoresOtherStreams).
//
// Side probes are off and ProbeTimeout is long, so a switch waits for its
// validation as long as a loaded host needs (validateWait is ProbeTimeout
// without a side probe's round trip): with validateWait's 300 ms on the
// slow path, a loaded host missed it 1 run in 8, the path rested, and the
// requests for it went elsewhere. The test is about the switch, not about
// how long it may wait.
func TestMeasuresTheChosenPathAfterSwitches(t *testing.T) {
	paths := []scenario.Path{symmetric("slow", 50), symmetric("fast", 5), symmetric("fast2", 5)}
	c, _ := emulated(t, paths, Config{StallTimeout: noFalseStalls, ProbeTimeout: noFalseStalls,
		Probes: Probes{Off: true}, Logf: t.Logf})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cycle := []int{1, 0, 0, 2}
	rtt := []float64{100, 10, 10}
	early, unfollowed, prev := 0, 0, 0
	for i := range 16 {
		p := cycle[i%4]
		res, err := c.GetOn(ctx, p, "/bytes/1000", nil)
		if err != nil {
			t.Fatal(err)
		}
		ms := float64(res.TCT()) / float64(time.Millisecond)
		switch {
		case res.Path == p:
		case res.Switched && res.Path == prev:
			// It left before quic-go applied the switch (moveWatch) and
			// is reported on the path that carried it.
			early++
		default:
			t.Errorf("request %d reported on %s (switched %v), want %s", i, res.PathName, res.Switched, paths[p].Name)
		}
		if !res.Followed() {
			unfollowed++
			t.Logf("request %d sent on %s came back on %s (TCT %.1f ms)", i, res.PathName, paths[res.Carrier].Name, ms)
		} else if ms < rtt[res.Path] {
			t.Errorf("request %d on %s: TCT %.1f ms, below the path's RTT %.0f ms", i, res.PathName, ms, rtt[res.Path])
		}
		prev = res.Path
	}
	t.Logf("%d of 12 switching requests left before their switch took effect", early)
	if early > 3 {
		t.Errorf("%d of 12 switching requests left before their switch took effect", early)
	}
	if unfollowed > unfollowedMax {
		t.Errorf("%d of 16 responses came back on another path than their request's, want at most %d", unfollowed, unfollowedMax)
	}
}

// unfollowedMax is how many of TestMeasuresTheChosenPathAfterSwitches's 16
// responses may come back on another path: a loaded host's share with room
// (at most 2 of 16 per run in 80 runs and 4 traced failures at load 13–16,
// 2026-11-30), far below the 10 of a switch without validation.
const unfollowedMax = 4
