package pcm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// loadResult is what a steady load of GETs saw.
type loadResult struct {
	sent, failed int
	longest      time.Duration
	errs         []error
	paths        map[int]int // requests per path (ResultOf), from the cut on
	results      []Result    // what ResultOf gave, from the cut on
}

// steadyGets sends a 5 kB GET every 10 ms for d through rt, each with a 5 s
// timeout, and calls cut once, at cutAt. It waits for every request.
func steadyGets(t *testing.T, rt http.RoundTripper, base string, d, cutAt time.Duration, cut func()) *loadResult {
	t.Helper()
	hc := &http.Client{Transport: rt}
	res := &loadResult{paths: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	cutDone := false
	for time.Since(start) < d {
		if !cutDone && time.Since(start) >= cutAt {
			cut()
			cutDone = true
		}
		wg.Add(1)
		go func(after bool) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/bytes/5120", nil)
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err == nil {
				var body []byte
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && (resp.StatusCode != 200 || len(body) != 5120) {
					err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, len(body))
				}
			}
			took := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			res.sent++
			res.longest = max(res.longest, took)
			if err != nil {
				res.failed++
				res.errs = append(res.errs, err)
				return
			}
			if r, ok := ResultOf(resp); ok && after {
				res.paths[r.Path]++
				res.results = append(res.results, r)
			}
		}(cutDone)
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	return res
}

// maxWait is the longest a request may take across a cut (issue's bound:
// the stall timeout, a probe and the retry fit well within it).
const maxWait = 2 * time.Second

// TestFailoverInFakeTime: with the active path black-holed, the first
// configured one, or two in a row, a Transport or a Client under steady
// load loses no GET and none takes over 2 s — in fake time, on emu/memnet.
func TestFailoverInFakeTime(t *testing.T) {
	for _, api := range []string{"Transport", "Client"} {
		for _, tc := range []struct {
			name string
			cut  []int // paths cut, one after another; -1: the active one
		}{
			{"active", []int{-1}},
			{"first", []int{0}},
			{"two in a row", []int{-1, -1}},
		} {
			t.Run(api+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { failoverCase(t, api, tc.cut) })
			})
		}
	}
}

func failoverCase(t *testing.T, api string, cut []int) {
	n := memnet.New()
	tr, _, base := memTransport(t, n, origin.Handler(nil), Config{Logf: t.Logf})
	var rt http.RoundTripper = tr
	active := func() int { return tr.origins[memServer.String()].c.Active() }
	if api == "Client" {
		cfg := tr.Config
		c := dialConfig(t, cfg)
		rt, active = c, c.Active
	}
	// Warm up: the connection and the selector's first tries.
	warm := steadyGets(t, rt, base, time.Second, time.Hour, nil)
	if warm.failed > 0 {
		t.Fatalf("before any cut: %v", warm.errs)
	}
	var cutPaths []int
	for i := range cut {
		r := steadyGets(t, rt, base, 3*time.Second, 100*time.Millisecond, func() {
			p := cut[i]
			if p < 0 {
				p = active()
			}
			cutPaths = append(cutPaths, p)
			n.SetDrop(memPath(p), true)
		})
		if r.failed > 0 || r.longest > maxWait {
			t.Errorf("cut %d (paths %v): %d of %d failed, longest %v; errors %v", i, cutPaths, r.failed, r.sent, r.longest, firstErrs(r.errs))
		}
	}
}

func firstErrs(errs []error) []error { return errs[:min(len(errs), 3)] }

// TestNonReplayableFailsNamingPath: a POST whose body cannot be replayed
// (no GetBody) in flight on a path that stalls fails at once with an error
// that names the path; a replayable one is retried and succeeds.
func TestNonReplayableFailsNamingPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		// The selector always names path 0: the requests stay where the
		// cut is until the stall detector moves the connection.
		c := memDial(t, n, 3, Config{Selector: sideSelector{}, Logf: t.Logf})
		base := "https://" + memServer.String()
		name := c.Paths()[0].Name
		// Validate every path first, as traffic does: a first probe of a
		// path never used, sent while the active path is black-holed, times
		// out on this network (quic-go; the cause is not understood yet).
		visitPaths(t, c, 1, 2, 0)
		n.SetDrop(memPath(0), true)

		// io.MultiReader hides the body from NewRequest: no GetBody, so
		// not replayable.
		body := io.MultiReader(strings.NewReader("once only"))
		req, _ := http.NewRequest(http.MethodPost, base+"/echo", body)
		start := time.Now()
		resp, err := c.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		var ps *PathStalledError
		if !errors.As(err, &ps) || ps.Path != name || !strings.Contains(err.Error(), name) {
			t.Fatalf("non-replayable POST on a stalled path: %v, want a PathStalledError naming %s", err, name)
		}
		if took := time.Since(start); took > maxWait {
			t.Errorf("the POST failed after %v, want within %v", took, maxWait)
		}
		// A replayable GET in flight on the next cut is sent again on
		// the third path and succeeds.
		n.SetDrop(memPath(0), false)
		active := c.Active()
		n.SetDrop(memPath(active), true)
		req, _ = http.NewRequest(http.MethodGet, base+"/bytes/100", nil)
		resp, err = c.RoundTrip(req)
		if err != nil {
			t.Fatalf("replayable GET across a stall: %v", err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkPattern(t, got, 100)
	})
}

// TestOpenBodyDoesNotFreezePaths: a response body left open (not read,
// not closed) does not keep the connection on its path: later requests
// still go where the selector sends them.
func TestOpenBodyDoesNotFreezePaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		_, hc, base := memTransport(t, n, origin.Handler(nil), Config{Strategy: pathsel.Config{Strategy: pathsel.Polling}})
		open, err := hc.Get(base + "/bytes/100")
		if err != nil {
			t.Fatal(err)
		}
		defer open.Body.Close()
		time.Sleep(100 * time.Millisecond) // its body has arrived
		seen := pathsOfGets(t, hc, base+"/bytes/10", 6)
		if len(seen) < 2 {
			t.Errorf("with one body open the requests went on paths %v, want all", seen)
		}
	})
}

// TestBodyBeingReadDoesNotFreezePaths: a response body that the caller
// keeps reading while its data trickles in (each Read blocks on the
// network) does not keep the connection on its path either: the
// connection may move while a body is read (QUIC carries the stream
// along; only a request waiting for its response head must not see a
// switch, begin says why). Before, a blocked body read counted as a
// request in flight, so under a steady load of short responses — each
// read to its end just after its head, one read of the last ones always
// blocked — a Transport's drains ended with a read still registered and
// the connection stayed where it was dialled or failed over to (0 % on
// the best live path through the emulator).
func TestBodyBeingReadDoesNotFreezePaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		_, hc, base := memTransport(t, n, dripHandler(), Config{Strategy: pathsel.Config{Strategy: pathsel.Polling}})
		getBody(t, hc, base+"/bytes/10") // dial
		drip, err := hc.Get(base + "/drip")
		if err != nil {
			t.Fatal(err)
		}
		read := make(chan int)
		go func() {
			b, _ := io.ReadAll(drip.Body)
			drip.Body.Close()
			read <- len(b)
		}()
		time.Sleep(100 * time.Millisecond) // the reader waits for the next drop
		seen := pathsOfGets(t, hc, base+"/bytes/10", 6)
		if len(seen) < 2 {
			t.Errorf("with one body being read the requests went on paths %v, want all", seen)
		}
		if got := <-read; got != dripDrops*len(dripDrop) {
			t.Errorf("the trickled body has %d bytes, want %d", got, dripDrops*len(dripDrop))
		}
	})
}

// dripHandler serves origin.Handler and /drip, a body of dripDrops
// drops, one every dripEvery, each flushed: its reader blocks on the
// network between drops.
func dripHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("/drip", func(w http.ResponseWriter, r *http.Request) {
		for range dripDrops {
			w.Write([]byte(dripDrop))
			w.(http.Flusher).Flush()
			time.Sleep(dripEvery)
		}
	})
	return mux
}

const (
	dripDrops = 40
	dripEvery = 50 * time.Millisecond
	dripDrop  = "drop"
)

// TestDialRacesPaths: with the first configured path black-holed, Dial
// completes on the next one a stagger later, not after a handshake
// timeout, and the connection sits on the path that won.
func TestDialRacesPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		roots := memServe(t, n, origin.Handler(nil), nil)
		cfg := memConfig(t, n, 3, Config{}, roots)
		n.SetDrop(memPath(0), true)
		start := time.Now()
		c, err := Dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The second path starts one stagger in; its handshake is a round
		// trip or two.
		if took := time.Since(start); took < dialStagger || took > dialStagger+4*2*oneWay {
			t.Errorf("dial took %v, want one stagger (%v) and a handshake", took, dialStagger)
		}
		if c.Active() != 1 {
			t.Errorf("connection on path %d, want 1 (0 is cut)", c.Active())
		}
		if _, err := c.GetOn(context.Background(), 1, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
		// A healthy first path wins alone, within one stagger.
		n.SetDrop(memPath(0), false)
		start = time.Now()
		c2, err := Dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		if took := time.Since(start); took >= dialStagger || c2.Active() != 0 {
			t.Errorf("healthy first path: dial took %v on path %d, want < %v on 0", took, c2.Active(), dialStagger)
		}
	})
}

// TestTransportResumesBodyAcrossStall: the active path dies while the
// caller reads a large GET body through Transport; the body arrives
// complete and intact, every byte once — the rest asked for again on the
// path the connection moved to.
func TestTransportResumesBodyAcrossStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		tr, hc, base := memTransport(t, n, origin.Handler(nil), Config{})
		getBody(t, hc, base+"/bytes/10")
		time.Sleep(time.Second)
		c := tr.origins[memServer.String()].c
		const size = 2 << 20
		resp, err := hc.Get(fmt.Sprintf("%s/bytes/%d", base, size))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		active := c.Active()
		w := &cutWriter{after: size / 4, cut: func() { n.SetDrop(memPath(active), true) }}
		if _, err := io.Copy(w, resp.Body); err != nil {
			t.Fatalf("body across the stall: %v", err)
		}
		checkPattern(t, w.buf.Bytes(), size)
		if r, ok := ResultOf(resp); !ok || r.Failovers != 1 || r.Credited {
			t.Errorf("result %+v (ok %v): want one failover and no sample", r, ok)
		}
	})
}

// pathsOfGets sends n GETs of url one after another, each read to its end,
// and returns the paths that carried them.
func pathsOfGets(t *testing.T, hc *http.Client, url string, n int) map[int]bool {
	t.Helper()
	seen := map[int]bool{}
	for range n {
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r, _ := ResultOf(resp)
		seen[r.Path] = true
	}
	return seen
}

// TestHeldBodyResumesAcrossRedial: a failover that ends more requests than
// half the server's streams takes a new connection and closes the old one
// (creditShortLocked); a GET body the caller held unread meanwhile still
// arrives whole and intact — resumed, not failed.
func TestHeldBodyResumesAcrossRedial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var logs logCount
		tr, hc, base := memTransport(t, n, slowHandler(), Config{Logf: logs.logf})
		getBody(t, hc, base+"/bytes/10")
		time.Sleep(time.Second)
		c := tr.origins[memServer.String()].c
		const size = 1 << 20
		held, err := hc.Get(fmt.Sprintf("%s/bytes/%d", base, size))
		if err != nil {
			t.Fatal(err)
		}
		defer held.Body.Close()
		head := make([]byte, 64<<10)
		if _, err := io.ReadFull(held.Body, head); err != nil {
			t.Fatal(err)
		}
		const waiting = 60 // more than half of http3.Server's 100 streams
		var wg sync.WaitGroup
		for range waiting {
			wg.Go(func() {
				if b := getBodyErr(hc, base+"/slowhead"); b != "late" {
					t.Errorf("a slow request across the failover: %q", b)
				}
			})
		}
		time.Sleep(100 * time.Millisecond)
		n.SetDrop(memPath(c.Active()), true)
		wg.Wait()
		if logs.count("taking a new connection") == 0 {
			t.Fatalf("the failover kept its connection; the test needs a redial")
		}
		rest, err := io.ReadAll(held.Body)
		if err != nil {
			t.Fatalf("the held body after the redial: %v", err)
		}
		checkPattern(t, append(head, rest...), size)
	})
}

// getBodyErr GETs url and returns its body, or the error as text.
func getBodyErr(hc *http.Client, url string) string {
	resp, err := hc.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
