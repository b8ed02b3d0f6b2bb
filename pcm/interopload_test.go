package pcm

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/scenario"
)

// The interop matrix (interop_test.go) moves between idle paths, one
// request at a time. These tests move and fail over under load, against
// servers that are not quic-go: loadWidth concurrent GETs of about
// loadBody bytes through hetquic's emulator (emu/udprelay) on three paths
// whose round trips make the selector move off the first, dialled one
// (60/20/40 ms), then the active path is black-holed while a wave is in
// flight. Each server answers the probes of a path the connection has not
// moved to in its own way; none of them may cost a request or leave a
// healthy path resting, and the small GETs after the cut stay within
// maxWait. TestLoadCutQuicGo is the control.
const (
	loadWidth = 32      // concurrent requests of a wave
	loadBody  = 200_000 // bytes of a body, about (each size is distinct)
)

// loadProbeSize is the body the side probes ask for (/bytes/1), a target
// the test sets and every peer serves with a 200, so the load runs the
// rule of a set target (it must answer 2xx: TestProbeTargetNotFound); the
// default target's probes meet the peers in TestProbesStayOnAgainstPeers.
const loadProbeSize = 1

// loadPaths are the emulated paths, one-way delays 30/10/20 ms: path 1 is
// the best, path 2 the best after it.
func loadPaths() []scenario.Path {
	return []scenario.Path{symmetric("p0", 30), symmetric("p1", 10), symmetric("p2", 20)}
}

// TestLoadCutAioquic: moves and a cut of the active path under load
// against aioquic, through Transport and Client.
func TestLoadCutAioquic(t *testing.T) {
	srv := startPyOrigin(t, "aioquic", false)
	loadCutAPIs(t, "aioquic", srv.addr, srv.tls)
}

// TestLoadCutQh3: the same against qh3, which follows a client only to an
// address it has never seen.
func TestLoadCutQh3(t *testing.T) {
	srv := startPyOrigin(t, "qh3", false)
	loadCutAPIs(t, "qh3", srv.addr, srv.tls)
}

// TestLoadCutNgtcp2: the same against ngtcp2's example server, which
// serves the bodies as files.
func TestLoadCutNgtcp2(t *testing.T) {
	addr, roots := startNgtcp2(t, writeLoadDocs)
	loadCutAPIs(t, "ngtcp2", addr, roots)
}

func loadCutAPIs(t *testing.T, stack, addr string, roots *tls.Config) {
	for _, api := range []string{"Transport", "Client"} {
		t.Run(api, func(t *testing.T) { loadCut(t, stack, api, addr, roots) })
	}
}

// loadSize is the body size of request i of a wave.
func loadSize(i int) int { return loadBody + i }

// writeLoadDocs writes the bodies of a wave, steadyGets' and the side
// probes' under dir/htdocs/bytes for
// servers that serve files, and returns that document root.
func writeLoadDocs(t *testing.T, dir string) string {
	sizes := []int{loadProbeSize, 5120} // the side probes' target, steadyGets'
	for i := range loadWidth {
		sizes = append(sizes, loadSize(i))
	}
	return writePatternDocs(t, dir, sizes)
}

// loadGet is one request of a wave: how long it took, what ResultOf said,
// and its error (a failed request, or a body that is not the pattern).
type loadGet struct {
	took time.Duration
	res  Result
	err  error
}

// wave sends loadWidth concurrent GETs through rt and waits for all of
// them; cut, if not nil, runs once the wave's first response is complete,
// while the others are in flight.
func wave(rt http.RoundTripper, base string, cut func()) []loadGet {
	out := make([]loadGet, loadWidth)
	var once sync.Once
	var wg sync.WaitGroup
	for i := range loadWidth {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			out[i].res, out[i].err = getLoadBody(ctx, rt, base, loadSize(i))
			out[i].took = time.Since(start)
			if cut != nil {
				once.Do(cut)
			}
		})
	}
	wg.Wait()
	return out
}

// getLoadBody fetches /bytes/n through rt and checks every byte.
func getLoadBody(ctx context.Context, rt http.RoundTripper, base string, n int) (Result, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/bytes/%d", base, n), nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return Result{}, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	res, _ := ResultOf(resp)
	switch {
	case err != nil:
		return res, err
	case resp.StatusCode != http.StatusOK || !checkPatternOK(b, n):
		return res, fmt.Errorf("/bytes/%d: status %d, %d bytes, not the pattern", n, resp.StatusCode, len(b))
	}
	return res, nil
}

// loadTally is what the waves of one phase saw.
type loadTally struct {
	requests, failed, switched, failovers int
	bytes                                 int64
	longest                               time.Duration
	paths                                 map[int]int
}

func (lt *loadTally) add(t *testing.T, phase string, gets []loadGet) {
	t.Helper()
	if lt.paths == nil {
		lt.paths = map[int]int{}
	}
	for i, g := range gets {
		lt.requests++
		lt.longest = max(lt.longest, g.took)
		if g.err != nil {
			lt.failed++
			t.Errorf("%s: request %d (/bytes/%d) after %v: %v", phase, i, loadSize(i), g.took, g.err)
			continue
		}
		lt.bytes += g.res.TotalBytes
		lt.paths[g.res.Path]++
		if g.res.Switched {
			lt.switched++
		}
		lt.failovers += g.res.Failovers
	}
}

// loadCut runs, through api: a steady load of small GETs (steadyGets),
// under which the selector tries the paths and moves with requests in
// flight; a wave of big bodies without a cut (the baseline); a wave during
// which the active path is black-holed; and the steady load again. It
// checks: every body intact, no request lost, no small GET over maxWait
// (checkSteady), and no path but the cut one resting; it logs the time
// the cut adds to the wave's longest request and the share on the best
// live path.
func loadCut(t *testing.T, stack, api, addr string, roots *tls.Config) {
	server, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	paths := loadPaths()
	relay, err := udprelay.Loopback(&scenario.Scenario{Name: "load", Paths: paths}, server.AddrPort(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	log := newInteropLog(t)
	cfg := Config{Server: relay.Addr().String(), ServerName: "localhost", TLS: roots, Logf: log.logf,
		Probes: Probes{Target: fmt.Sprintf("/bytes/%d", loadProbeSize)}}
	for i, a := range relay.PathAddrs() {
		cfg.Paths = append(cfg.Paths, LocalPath{Name: paths[i].Name, Addr: a})
	}
	rt, client := loadClient(t, api, cfg)
	base := "https://" + cfg.Server
	warm := steadyGets(t, rt, base, steadyFor, 0, func() {})
	checkSteady(t, stack+" "+api+" before the cut", warm)
	var uncut, during loadTally
	uncut.add(t, "the uncut wave", wave(rt, base, nil))
	cut := -1
	during.add(t, "the cut's wave", wave(rt, base, func() {
		cut = client().Active()
		log.logf("test: black-holing path %d (%s)", cut, paths[cut].Name)
		if err := relay.Engine().Outage(paths[cut].Name, time.Hour); err != nil {
			t.Error(err)
		}
	}))
	for _, p := range []struct {
		name string
		lt   loadTally
	}{{"uncut wave", uncut}, {"cut wave", during}} {
		t.Logf("%s %s %s: %d requests, %d failed, %d bytes, longest %v, %d switched, %d failovers, per path %v",
			stack, api, p.name, p.lt.requests, p.lt.failed, p.lt.bytes, p.lt.longest, p.lt.switched, p.lt.failovers, p.lt.paths)
	}
	// Logged, not asserted: a wave's longest request is the server's CPU
	// time for 6.4 MB on a loaded machine (uncut waves took 0.3-6.6 s
	// against the same server at load 20-25), so the cut's share of it is
	// no real-socket bound (pcminterop65's notes give the numbers).
	t.Logf("LOADCUT | %s | %s | cut %d | wave longest uncut %v, cut %v (added %v) | %d failovers |",
		stack, api, cut, uncut.longest.Round(time.Millisecond), during.longest.Round(time.Millisecond),
		(during.longest - uncut.longest).Round(time.Millisecond), during.failovers)
	settled := steadyGets(t, rt, base, steadyFor, steadyFor/2, func() {})
	checkSteady(t, fmt.Sprintf("%s %s after the cut of path %d", stack, api, cut), settled)
	checkBestLive(t, stack+" "+api, client(), settled, cut)
	logVerdicts(t, stack+" "+api, log, paths, cut)
}

// logVerdicts logs the stall verdicts of the client's log per path: one
// on the cut path, none on the others, unless the machine was too busy to
// hear a healthy path in time (loadcut29's notes trace them to the
// test process not being scheduled). Logged, not asserted: each false
// verdict already shows as a failed or slow request, or a resting path,
// when it costs one.
func logVerdicts(t *testing.T, what string, log *interopLog, paths []scenario.Path, cut int) {
	t.Helper()
	var per []int
	for _, p := range paths {
		per = append(per, log.count("path "+p.Name+" stalled", "failing over"))
	}
	t.Logf("VERDICTS | %s | cut %d | stall verdicts per path %v |", what, cut, per)
}

// steadyFor is how long each steady load runs; after the cut, its second
// half is counted for the share on the best live path.
const steadyFor = 4 * time.Second

// checkSteady logs what a steady load saw and fails t if a GET failed or
// took over maxWait. Under -race the longest is logged, not checked: the
// race detector slows every goroutine of both ends several times on real
// sockets, so the bound would measure the detector; .ci/run runs these
// tests without it too.
func checkSteady(t *testing.T, what string, r *loadResult) {
	t.Helper()
	switched := 0
	for _, res := range r.results {
		if res.Switched {
			switched++
		}
	}
	t.Logf("%s: %d GETs, %d failed, longest %v, %d switched, per path %v", what, r.sent, r.failed, r.longest, switched, r.paths)
	if r.failed > 0 || r.longest > maxWait && !raceEnabled {
		t.Errorf("%s: %d of %d GETs failed, longest %v; want none failed, none over %v; errors %v", what, r.failed, r.sent, r.longest, maxWait, firstErrs(r.errs))
	}
}

// checkBestLive logs the share of the steady GETs r counted on the best
// live path (path 1, or path 2 after path 1 was cut), and fails t if a
// path but cut rests. The share is logged, not asserted: after a wave the
// selector holds 32 big bodies' times as the samples of the path that
// carried it, and the share fell below mostRequests against every server,
// quic-go's own too (0.32 once at load 17; pcminterop65's notes).
func checkBestLive(t *testing.T, what string, c *Client, r *loadResult, cut int) {
	t.Helper()
	best := 1
	if cut == 1 {
		best = 2
	}
	t.Logf("SHARE | %s | cut %d | %.2f on the best live path %d | per path %v | stats %+v |", what, cut, shareOn(r, best), best, r.paths, c.Stats())
	resting := c.Resting()
	for i, r := range resting {
		if r && i != cut {
			t.Errorf("%s: healthy path %d rests after the cut of path %d (resting %v)", what, i, cut, resting)
		}
	}
}

// loadClient returns api's round tripper over cfg and a function that
// returns the Client under it (Transport's dials on its first request).
func loadClient(t *testing.T, api string, cfg Config) (http.RoundTripper, func() *Client) {
	if api == "Transport" {
		tr := &Transport{Config: cfg}
		t.Cleanup(func() { tr.Close() })
		return tr, func() *Client {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.origins[cfg.Server].c
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func() *Client { return c }
}

// TestLoadCutQuicGo is the same against quic-go's own server: the control.
func TestLoadCutQuicGo(t *testing.T) {
	srv := startOrigin(t)
	loadCutAPIs(t, "quic-go", srv.addr, srv.pool)
}
