package pcm

import (
	"bytes"
	"context"
	"crypto/tls"
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

// A small request's TCT is the emulated round trip plus processing, on each
// path: never less than the round trip, and well below the other path's
// (the bounds leave room for a loaded CI machine).
func TestTCTMatchesEmulatedDelay(t *testing.T) {
	c, _ := emulated(t, []scenario.Path{symmetric("near", 10), symmetric("far", 40)}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		path         int
		rttMs, maxMs float64
	}{{0, 20, 50}, {1, 80, 140}} {
		c.GetOn(ctx, tc.path, "/bytes/10", nil) // move there first
		for range 5 {
			res, err := c.GetOn(ctx, tc.path, "/bytes/1000", nil)
			if err != nil {
				t.Fatal(err)
			}
			ms := float64(res.TCT()) / float64(time.Millisecond)
			if res.Path != tc.path || ms < tc.rttMs || ms > tc.maxMs {
				t.Errorf("path %d: TCT %.2f ms, want %.0f–%.0f ms", res.Path, ms, tc.rttMs, tc.maxMs)
			}
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
// and one on the 10 ms path 56 ms after the 100 ms one). The bounds split
// the difference, leaving room for a loaded CI machine.
func TestMeasuresTheChosenPathAfterSwitches(t *testing.T) {
	paths := []scenario.Path{symmetric("slow", 50), symmetric("fast", 5), symmetric("fast2", 5)}
	c, _ := emulated(t, paths, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rtt, maxMs := []float64{100, 10, 10}, []float64{160, 45, 45}
	for i := range 16 {
		p := []int{1, 0, 0, 2}[i%4]
		res, err := c.GetOn(ctx, p, "/bytes/1000", nil)
		if err != nil {
			t.Fatal(err)
		}
		ms := float64(res.TCT()) / float64(time.Millisecond)
		if res.Path != p || ms < rtt[p] || ms > maxMs[p] {
			t.Errorf("request %d on %s (switched %v): TCT %.1f ms, want %.0f–%.0f", i, res.PathName, res.Switched, ms, rtt[p], maxMs[p])
		}
	}
}
