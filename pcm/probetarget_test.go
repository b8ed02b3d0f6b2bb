package pcm

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// probedRTTs is the round trip each path's latest side probe measured (0:
// none answered yet).
func probedRTTs(c *Client) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.paths))
	for i, ps := range c.paths {
		out[i] = ps.probedRTT
	}
	return out
}

// errorPageBytes is the body of the error page of userOrigin: big enough
// that a probe reading it once shows in the probes' bytes many times over
// (maxProbeCost).
const errorPageBytes = 1 << 20

// maxProbeCost bounds what the side probes of a 3-path client may cost in
// TestProbesMeasureAnyOrigin's 10 s: handshakes and about 20 probes' heads
// (tens of kB), a quarter of one error page.
const maxProbeCost = errorPageBytes / 4

// userOrigin is an origin as a user of quic-go's http3.Server writes it:
// its own handlers (only /hello here), no /bytes/0, and an error page of
// errorPageBytes for anything else.
func userOrigin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello\n") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, strings.Repeat("x", errorPageBytes))
	})
	return mux
}

// TestProbesMeasureAnyOrigin: against an origin that serves none of
// hetquic's paths, the default side probes stay on and measure each idle
// path's round trip (their default target answers 404, which measures the
// path as well as a 200 does), and a probe costs its response's head, not
// the origin's 1 MB error page. Fake time.
func TestProbesMeasureAnyOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		logs := &logCount{}
		c := memDialHandler(t, n, 3, Config{Logf: logs.logf}, userOrigin())
		oneWays := []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 25 * time.Millisecond}
		for i, d := range oneWays {
			n.SetDelay(memPath(i), d)
		}
		for range 100 {
			if _, err := c.Get(context.Background(), "/hello", nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := logs.count("side probes off"); got != 0 {
			t.Errorf("side probes turned off against an origin without /bytes/0:\n%s", logs)
		}
		rtts := probedRTTs(c)
		for i := 1; i < len(oneWays); i++ {
			// The path's round trip: its own delay out, the server's
			// (oneWay, memServePair) back.
			want := oneWays[i] + oneWay
			if rtts[i] < want || rtts[i] > want+5*time.Millisecond {
				t.Errorf("path %d: side probes measured %v, want its round trip %v", i, rtts[i], want)
			}
		}
		if b := c.Stats().ProbeBytes; b > maxProbeCost {
			t.Errorf("side probes cost %d bytes in 10 s, over %d: a probe read the error page", b, maxProbeCost)
		}
	})
}

// TestProbeTargetNeverAnswers: a probe target that the origin never
// answers (its handler waits for ever; the default target's 404 would
// answer, so the probes ask for the one configured) turns the probes off
// with one warning, and no request fails meanwhile. Fake time.
func TestProbeTargetNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		logs := &logCount{}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello\n") })
		mux.HandleFunc("/hang", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		c := memDialHandler(t, n, 3, Config{Logf: logs.logf, Probes: Probes{Target: "/hang"}}, mux)
		checkProbesOffOnce(t, c, logs, "/hello", 40)
	})
}

// peerProbeWait bounds how long TestProbesStayOnAgainstPeers sends
// requests while it waits for every idle path's first probe answer: the
// start-up sweep asks them at once, but a side connection's handshake with
// a Python server took seconds on two loaded cores (serverStartBound).
const peerProbeWait = 30 * time.Second

// TestProbesStayOnAgainstPeers: the default side probes stay on against
// the interop peers and measure every idle path: aioquic and qh3
// (interop/h3_origin.py, which serves /bytes/0 empty) and ngtcp2's
// gtlsserver, whose document root answers /bytes/0 with 404 (before the
// probes took any answer as a sample, that 404 turned them off). The
// probe timeout is raised for a loaded machine; the target is the
// default.
func TestProbesStayOnAgainstPeers(t *testing.T) {
	for _, stack := range []string{"aioquic", "qh3", "ngtcp2"} {
		t.Run(stack, func(t *testing.T) {
			var addr string
			var roots *tls.Config
			if stack == "ngtcp2" {
				addr, roots = startNgtcp2(t, writeBytesDocs)
			} else {
				srv := startPyOrigin(t, stack, false)
				addr, roots = srv.addr, srv.tls
			}
			log := newInteropLog(t)
			c := dialConfig(t, Config{Server: addr, ServerName: "localhost", TLS: roots, Paths: loopbackPaths(3),
				Logf: log.logf, Probes: Probes{Timeout: 5 * time.Second}})
			defer c.Close()
			probed := 0
			for start := time.Now(); probed < 2 && time.Since(start) < peerProbeWait; time.Sleep(200 * time.Millisecond) {
				if _, err := c.Get(context.Background(), "/bytes/5120", nil); err != nil {
					t.Fatal(err)
				}
				probed = 0
				for _, rtt := range probedRTTs(c) {
					if rtt > 0 {
						probed++
					}
				}
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			for _, l := range log.lines {
				if strings.Contains(l, "side probes off") {
					t.Errorf("%s: %s", stack, l)
				}
			}
			if probed < 2 {
				t.Errorf("%s: side probes answered on %d paths (%v), want both idle ones", stack, probed, probedRTTs(c))
			}
		})
	}
}
