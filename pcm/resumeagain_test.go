package pcm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestBodyResumesAfterSecondStall: the path GET bodies were resumed on
// stalls too, while the caller reads the resumed rest; every body still
// arrives whole and intact, resumed a second time on the path the
// connection moved to then. TestLoadCutAioquic lost 31 of 32 bodies so:
// a false stall verdict during the wave moved the connection and resumed
// every body, the cut then stalled the path the resumes were on, and each
// body's read failed with that verdict's PathStalledError, logged nowhere
// (the resume's request carries a Range, so its own body never resumed).
// One body, and a wave of them read concurrently (the cuts come when the
// wave has delivered a quarter, then half, of its bytes), through a
// Transport and through a Client.
func TestBodyResumesAfterSecondStall(t *testing.T) {
	for _, transport := range []bool{true, false} {
		for _, width := range []int{1, 16} {
			t.Run(fmt.Sprintf("transport=%v/width=%d", transport, width), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { resumeTwice(t, transport, width) })
			})
		}
	}
}

// resumeTwice reads width concurrent GET bodies through a Transport (or
// a Client) while the active path is cut twice, and checks every body.
func resumeTwice(t *testing.T, transport bool, width int) {
	n := memnet.New()
	var logs logCount
	cfg := Config{Logf: logs.logf}
	var (
		c    *Client
		hc   *http.Client
		base = "https://" + memServer.String()
	)
	if transport {
		var tr *Transport
		tr, hc, base = memTransport(t, n, origin.Handler(nil), cfg)
		getBody(t, hc, base+"/bytes/10")
		c = tr.origins[memServer.String()].c
	} else {
		c = memDial(t, n, 3, cfg)
		hc = &http.Client{Transport: c}
	}
	for p := range c.numPaths() { // every path validated: the failovers migrate
		if _, err := c.GetOn(t.Context(), p, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
	}
	size := (4 << 20) / width
	total := int64(size * width)
	var (
		delivered atomic.Int64
		mu        sync.Mutex
		cut       []int
	)
	cutAt := func(got int64) { // the active path dies when the wave crosses a quarter, then a half
		mu.Lock()
		defer mu.Unlock()
		if len(cut) < 2 && got >= total/4*int64(len(cut)+1) {
			cut = append(cut, c.Active())
			n.SetDrop(memPath(c.Active()), true)
		}
	}
	var wg sync.WaitGroup
	failed := make([]error, width)
	for i := range width {
		wg.Go(func() {
			resp, err := hc.Get(fmt.Sprintf("%s/bytes/%d", base, size))
			if err != nil {
				failed[i] = err
				return
			}
			defer resp.Body.Close()
			w := &countingWriter{got: func(k int) { cutAt(delivered.Add(int64(k))) }}
			if _, err := io.Copy(w, resp.Body); err != nil {
				failed[i] = err
				return
			}
			if !checkPatternOK(w.buf, size) {
				failed[i] = fmt.Errorf("%d bytes, not the pattern", len(w.buf))
			}
		})
	}
	wg.Wait()
	lost := 0
	for i, err := range failed {
		if err != nil {
			lost++
			t.Errorf("body %d across two stalls: %v", i, err)
		}
	}
	if len(cut) != 2 || cut[0] == cut[1] {
		t.Fatalf("paths cut %v: the test needs two cuts, the second on the path the resumes went on", cut)
	}
	resumes := logs.count("resumed from")
	if lost > 0 {
		t.Fatalf("%d of %d bodies lost (paths %v cut; %d resumes logged)", lost, width, cut, resumes)
	}
	if resumes <= width {
		t.Errorf("%d resumes logged for %d bodies: the second cut resumed none", resumes, width)
	}
}

// countingWriter keeps what it is given and reports each write's size.
type countingWriter struct {
	buf []byte
	got func(int)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	w.got(len(b))
	return len(b), nil
}

// TestBodyResumeBudget: a body whose every resume stalls before its first
// byte (the server answers each Range request's head, never its bytes,
// and each path dies as a resume lands on it) gives up after one resume
// per path (resumeCount), with a log line saying so, instead of
// resuming for as long as failovers succeed: read through RoundTrip, and
// through Get (which logs a resume before it is sent: its path dies when
// the server answers it).
func TestBodyResumeBudget(t *testing.T) {
	for _, api := range []struct{ name, resumed string }{{"RoundTrip", "resumed from"}, {"Get", "resuming from byte"}} {
		t.Run(api.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { resumeBudgetRow(t, api.name == "Get", api.resumed) })
		})
	}
}

// resumeBudgetRow reads a body through Get or RoundTrip while each resume
// cuts the active path when it lands (RoundTrip: its log line, which
// holds resumed; Get: its head served), and checks the give-up.
func resumeBudgetRow(t *testing.T, get bool, resumed string) {
	n := memnet.New()
	var logs logCount
	var c *Client
	var mu sync.Mutex
	down := map[int]bool{}
	cutActive := func() { // the path the connection is on dies; the others come back
		mu.Lock()
		defer mu.Unlock()
		for p := range down {
			n.SetDrop(memPath(p), false)
			delete(down, p)
		}
		down[c.Active()] = true
		n.SetDrop(memPath(c.Active()), true)
	}
	cfg := Config{Logf: func(format string, args ...any) {
		logs.logf(format, args...)
		if !get && strings.Contains(fmt.Sprintf(format, args...), resumed) {
			cutActive()
		}
	}}
	h := headOnlyRanges{h: origin.Handler(nil)}
	if get {
		h.served = cutActive
	}
	c = memDialHandler(t, n, 3, cfg, h)
	for p := range c.numPaths() {
		if _, err := c.GetOn(t.Context(), p, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
	}
	const size = 1 << 20
	target := fmt.Sprintf("/bytes/%d", size)
	w := &cutWriter{after: size / 4, cut: cutActive}
	var err error
	if get {
		_, err = c.Get(t.Context(), target, w)
	} else {
		hc := &http.Client{Transport: c}
		resp, herr := hc.Get("https://" + memServer.String() + target)
		if herr != nil {
			t.Fatal(herr)
		}
		defer resp.Body.Close()
		_, err = io.Copy(w, resp.Body)
	}
	var ps *PathStalledError
	resumes := logs.count(resumed)
	if !errors.As(err, &ps) || resumes != c.numPaths() || logs.count("not resumed again") != 1 {
		t.Fatalf("body: %d bytes, %v after %d resumes (%d give-ups logged); want a PathStalledError after %d resumes, one give-up",
			w.buf.Len(), err, resumes, logs.count("not resumed again"), c.numPaths())
	}
}

// headOnlyRanges serves h, but answers a Range request with its head only:
// the bytes never come. served (nil: none) is called when such a head has
// gone out.
type headOnlyRanges struct {
	h      http.Handler
	served func()
}

func (s headOnlyRanges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Range") == "" {
		s.h.ServeHTTP(w, r)
		return
	}
	s.h.ServeHTTP(headOnly{w, r, s.served}, r)
}

// headOnly sends the head at once and holds every byte of the body until
// the request ends.
type headOnly struct {
	http.ResponseWriter
	r      *http.Request
	served func()
}

func (w headOnly) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	w.ResponseWriter.(http.Flusher).Flush()
	if w.served != nil {
		w.served()
	}
}

func (w headOnly) Write([]byte) (int, error) {
	<-w.r.Context().Done()
	return 0, w.r.Context().Err()
}
