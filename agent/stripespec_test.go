package agent

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/server"
)

// specApp is an app-server for the speculative pieces' tests: one object
// at /obj, served by how (each request's answer; spec: it is the
// speculative one), counting the speculative requests and what it wrote
// for them. The speculative request is the first Range request from
// specOffset (DefaultStripeMin) without If-Range: the stripe asks for
// those bytes itself only after it dropped that piece.
type specApp struct {
	how     func(w http.ResponseWriter, r *http.Request, spec bool)
	mu      sync.Mutex
	seen    bool     // the speculative request came
	specs   []string // Range of each speculative request
	specOut int64    // body bytes written for them
}

func (a *specApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rg := r.Header.Get("Range")
	a.mu.Lock()
	spec := strings.HasPrefix(rg, fmt.Sprintf("bytes=%d-", DefaultStripeMin)) && r.Header.Get("If-Range") == "" && !a.seen
	a.seen = a.seen || spec
	a.mu.Unlock()
	if !spec {
		a.how(w, r, false)
		return
	}
	cw := &countWriter{ResponseWriter: w}
	a.how(cw, r, true)
	a.mu.Lock()
	a.specs, a.specOut = append(a.specs, rg), a.specOut+cw.n
	a.mu.Unlock()
}

// countWriter counts the body bytes written through it.
type countWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// specObject is an object of size bytes whose content says its version.
func specObject(size int, version byte) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7) ^ version
	}
	return b
}

// serveVersion serves obj as http.ServeContent does (Range, If-Range,
// 416) with ETag etag.
func serveVersion(w http.ResponseWriter, r *http.Request, obj []byte, etag string) {
	w.Header().Set("Etag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj))
}

// specApp's address, beside memApp.
const specAppAddr = "10.6.0.81:80"

// specResult is what specRun saw: the app's body, the app-server's
// speculative requests, and the client's speculative pieces used and
// dropped.
type specResult struct {
	body          []byte
	app           *specApp
	used, dropped int64
}

// specRun warms an agent on memnet whose paths are mix up, then GETs
// specAppAddr/obj once through it. Before that GET each path's rate
// estimate is set to its link's rate: speculate asks of a path that it be
// measured faster than the original's, and the warm-up's estimates of
// specMix's paths cross now and then. modC, if set, changes the client's
// configuration.
func specRun(t *testing.T, mix []mixPath, how func(w http.ResponseWriter, r *http.Request, spec bool), modC func(*ClientConfig)) specResult {
	t.Helper()
	app := &specApp{how: how}
	res := specResult{app: app}
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, len(mix), func(c *server.Config) { c.Allow = append(c.Allow, specAppAddr) }, func(c *ClientConfig) {
			c.Scheduler = firstPath{}
			if modC != nil {
				modC(c)
			}
		})
		m.serveHTTP(&http.Server{Handler: app}, m.pn.listen(specAppAddr))
		for i, p := range mix {
			m.n.SetLink(memPath(i).Addr, p.rate, max(64<<10, int(p.rate*4*p.delay.Seconds())))
			m.n.SetDelay(memPath(i).Addr, p.delay)
		}
		m.n.SetDelay(memCTServer.Addr(), mixServerDelay)
		for range sumWarm {
			mustGetIntact(t, m, sumWarmSize)
		}
		app.mu.Lock()
		app.seen, app.specs, app.specOut = false, nil, 0
		app.mu.Unlock()
		used, dropped := m.c.specsUsed.Load(), m.c.specsDropped.Load() // the warm-up's
		for i, p := range m.c.pathList() {
			p.mu.Lock()
			p.rate = mix[i].rate
			p.mu.Unlock()
		}
		resp, err := m.hc.Get("http://" + specAppAddr + "/obj")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if res.body, err = io.ReadAll(resp.Body); err != nil {
			t.Fatal(err)
		}
		res.used, res.dropped = m.c.specsUsed.Load()-used, m.c.specsDropped.Load()-dropped
	})
	return res
}

// firstPath is a scheduler that puts every request it may on path 0: the
// original of specRun's GET runs on the slower path whatever the
// schedulers' estimates say, so the faster one speculates (speculate).
type firstPath struct{}

func (firstPath) Pick(_ pathchoice.Request, ps []pathchoice.PathView) int {
	for _, p := range ps {
		if p.ID == 0 {
			return 0
		}
	}
	return ps[0].ID
}

func (firstPath) Done(int, int64, time.Duration) {}

// specMix is 2 : 1 with the slower path nearer (40/14 + 80/30 ms on
// memnet), where the original goes: the faster path speculates (speculate).
var specMix = []mixPath{{5e6, 2 * time.Millisecond, 0}, {10e6, 10 * time.Millisecond, 0}}

// TestStripeSpecUsed: on a server that serves ranges, the faster path's
// speculative piece is asked for once, at specOffset (DefaultStripeMin),
// and used, and the app gets the object exactly.
func TestStripeSpecUsed(t *testing.T) {
	obj := specObject(8<<20, 1)
	res := specRun(t, specMix, func(w http.ResponseWriter, r *http.Request, _ bool) { serveVersion(w, r, obj, `"a"`) }, nil)
	if !bytes.Equal(res.body, obj) {
		t.Fatalf("the app got %d bytes, not the object's %d", len(res.body), len(obj))
	}
	if len(res.app.specs) != 1 || !strings.HasPrefix(res.app.specs[0], fmt.Sprintf("bytes=%d-", DefaultStripeMin)) {
		t.Fatalf("speculative requests %q, want one from byte %d", res.app.specs, DefaultStripeMin)
	}
	if res.used != 1 || res.dropped != 0 {
		t.Errorf("speculative pieces used %d, dropped %d; want 1 and 0", res.used, res.dropped)
	}
}

// TestStripeSpecFallbacks: whatever the speculative piece's answer, the
// app gets exactly the original's object: a server that ignores Range
// (its 200 stopped at the head, not sent whole), an object that changed
// between the original and the piece (another ETag, Last-Modified or
// length: the piece dropped and asked again with If-Range), and an object
// smaller than the piece's offset (a 416 without a body).
func TestStripeSpecFallbacks(t *testing.T) {
	big, other := specObject(8<<20, 1), specObject(8<<20, 2)
	modified := func(w http.ResponseWriter, r *http.Request, obj []byte, sec int) {
		http.ServeContent(w, r, "", time.Date(2026, 11, 28, 10, 0, sec, 0, time.UTC), bytes.NewReader(obj))
	}
	for _, c := range []struct {
		name    string
		obj     []byte
		how     func(w http.ResponseWriter, r *http.Request, spec bool)
		maxSpec int64 // body bytes the app-server may write for the speculative request
		dropped int64 // speculative pieces the stripe could not use
	}{
		{"a server that ignores Range", big, func(w http.ResponseWriter, r *http.Request, spec bool) {
			if !spec {
				time.Sleep(specSlowHead) // the speculative answer's head comes first
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			w.Write(big)
		}, specStopped, 0}, // not stripeable: dropped at the original's head, before a stripe
		{"another ETag", big, func(w http.ResponseWriter, r *http.Request, spec bool) {
			if spec {
				serveVersion(w, r, other, `"b"`)
				return
			}
			serveVersion(w, r, big, `"a"`)
		}, 1 << 20, 1},
		{"another Last-Modified", big, func(w http.ResponseWriter, r *http.Request, spec bool) {
			if spec {
				modified(w, r, other, 1)
				return
			}
			modified(w, r, big, 0)
		}, 1 << 20, 1},
		{"another length, no validator", big, func(w http.ResponseWriter, r *http.Request, spec bool) {
			if spec {
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(append(other, 0)))
				return
			}
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(big))
		}, 1 << 20, 1},
		{"an object smaller than the offset", specObject(DefaultStripeMin-1, 1), func(w http.ResponseWriter, r *http.Request, spec bool) {
			serveVersion(w, r, specObject(DefaultStripeMin-1, 1), `"a"`)
		}, 200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := specRun(t, specMix, c.how, nil)
			if !bytes.Equal(res.body, c.obj) {
				t.Fatalf("the app got %d bytes that are not the original's object (%d bytes); speculative requests %q, used %d, dropped %d",
					len(res.body), len(c.obj), res.app.specs, res.used, res.dropped)
			}
			if len(res.app.specs) != 1 {
				t.Fatalf("speculative requests %q, want one", res.app.specs)
			}
			if res.app.specOut > c.maxSpec {
				t.Errorf("the app-server wrote %d bytes for the speculative request, want ≤ %d", res.app.specOut, c.maxSpec)
			}
			if res.used != 0 || res.dropped != c.dropped {
				t.Errorf("speculative pieces used %d, dropped %d; want 0 and %d", res.used, res.dropped, c.dropped)
			}
		})
	}
}

// TestStripeSpecNotOnMetered: a metered path asks for nothing
// speculatively; the download is still whole.
func TestStripeSpecNotOnMetered(t *testing.T) {
	obj := specObject(8<<20, 1)
	res := specRun(t, specMix, func(w http.ResponseWriter, r *http.Request, _ bool) { serveVersion(w, r, obj, `"a"`) }, func(c *ClientConfig) {
		c.Paths[1].Role = RoleMetered
	})
	if !bytes.Equal(res.body, obj) {
		t.Fatalf("the app got %d bytes, not the object's %d", len(res.body), len(obj))
	}
	if len(res.app.specs) != 0 || res.used+res.dropped != 0 {
		t.Errorf("speculative requests %q on a metered path, want none", res.app.specs)
	}
}

// specSlowHead delays the original's head where a test needs the
// speculative answer's head first. specStopped bounds what the app-server
// writes for a speculative answer stopped at its head: 135 kB (what the
// streams' windows hold) where the head stops it, 1.2 MB in specSlowHead
// where only the original's head does.
const (
	specSlowHead = 200 * time.Millisecond
	specStopped  = 512 << 10
)
