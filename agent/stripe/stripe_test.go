package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// fakeHost is a client of n paths of equal state, two workers each,
// whose pieces are the bytes of object; fail makes every fetch on that
// path fail.
type fakeHost struct {
	n      atomic.Int32
	object []byte
	fail   int // a path whose fetches fail (-1: none)

	mu      sync.Mutex
	fetched map[int]int64 // bytes fetched per path
	reinj   int
	// copies and copyBytes: Host.EndgameCopied's count and bytes.
	copies, copyBytes int64
}

func (h *fakeHost) Paths() int { return int(h.n.Load()) }

func (h *fakeHost) Pins(from, to int) []int { return twoEach(from, to) }

// twoEach is two workers for each of paths from..to-1.
func twoEach(from, to int) []int {
	var pins []int
	for id := from; id < to; id++ {
		pins = append(pins, id, id)
	}
	return pins
}

func (h *fakeHost) Path(int) (PathState, bool) {
	return PathState{RTT: 10 * time.Millisecond, Rate: fakeRate}, true
}

// fakeRate is each fakeHost path's rate in bytes a second.
const fakeRate = 10e6

func (h *fakeHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	off, end, err := r.Open(func() error { return nil })
	if err != nil {
		return nil, err
	}
	time.Sleep(10 * time.Millisecond) // a round trip, on fake time
	if pin == h.fail {
		return nil, errors.New("path failed")
	}
	b := h.object[off : end+1]
	// The bytes come at the path's rate: delivered at once, a piece read
	// as a path of unbounded rate, which then took the original's whole
	// rest (reinjectPrefix) and left the other path nothing (1 in 30 runs
	// of TestStripeDelivers under -race).
	time.Sleep(seconds(float64(len(b)) / fakeRate))
	r.Received(len(b))
	h.mu.Lock()
	h.fetched[pin] += int64(len(b))
	h.mu.Unlock()
	return b, ctx.Err()
}

func newFakeHost(n int, object []byte, fail int) *fakeHost {
	h := &fakeHost{object: object, fail: fail, fetched: map[int]int64{}}
	h.n.Store(int32(n))
	return h
}

func (h *fakeHost) Reinjected() { h.mu.Lock(); h.reinj++; h.mu.Unlock() }

func (h *fakeHost) Blocked() {}

func (h *fakeHost) EndgameCopied(size int64) {
	h.mu.Lock()
	h.copies++
	h.copyBytes += size
	h.mu.Unlock()
}

func (h *fakeHost) Measured(int, float64) {}

// object is n bytes of a pattern that repeats every 251 bytes (a prime:
// no piece boundary lines up with it), made without a per-byte loop,
// which the race detector makes slow for the larger objects.
func object(n int) []byte {
	unit := make([]byte, 251)
	for i := range unit {
		unit[i] = byte(i * 7)
	}
	return bytes.Repeat(unit, n/len(unit)+1)[:n]
}

// TestStripeDelivers: with the original stream having given the app the
// first bytes, the pieces fetched over two paths reach the app in order and
// intact, and both paths carried some (the original's path, in pieces or
// in the original run on past from).
func TestStripeDelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, from = 4 << 20, 256 << 10
		h := newFakeHost(2, object(size), -1)
		s := Start(context.Background(), h, 0, from, size)
		cut := playOriginal(s, 10e6)
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, cut)
		s.Abandon()
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object[cut:]) {
			t.Fatalf("delivered to %d of %d: %v (intact %v)", n, size, err, bytes.Equal(w.Body.Bytes(), h.object[cut:]))
		}
		if h.fetched[0] == 0 && cut <= from || h.fetched[1] == 0 {
			t.Fatalf("bytes per path %v, the original stopped at %d: both paths should carry some", h.fetched, cut)
		}
	})
}

// TestStripeJoinsNewPath: a path the client adds while a stripe runs (an
// automatic lane, a reload) takes pieces of that stripe, and the object
// still reaches the app intact.
func TestStripeJoinsNewPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 8 << 20 // 2 s on the first path alone
		h := &pacedHost{object: object(size), rate: []float64{4e6, 4e6}, rtt: 20 * time.Millisecond,
			fetched: map[int]int64{}, asked: map[int]int64{}, links: map[int]chan struct{}{0: make(chan struct{}, 1), 1: make(chan struct{}, 1)}}
		h.up.Store(1)
		s := Start(context.Background(), h, 0, 0, size)
		go func() {
			time.Sleep(200 * time.Millisecond)
			h.up.Store(2)
		}()
		deliverWhole(t, s, h.object)
		if h.fetched[1] < size/4 {
			t.Fatalf("bytes per path %v: the path added mid-stripe carried under a quarter", h.fetched)
		}
	})
}

// TestStripeFailsWhole: a piece whose every copy failed ends the delivery
// with its error, short of the end (the client then cuts the app).
func TestStripeFailsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 4 << 20
		h := newFakeHost(1, object(size), 0)
		s := Start(context.Background(), h, 0, 0, size)
		n, err := s.Deliver(httptest.NewRecorder(), 0)
		s.Abandon()
		if err == nil || n >= size {
			t.Fatalf("delivered to %d of %d with no error", n, size)
		}
	})
}

// pacedHost is a client of paths whose state says rate and RTT; a fetch
// takes the RTT and its bytes at the rate, plus late on the path late
// names (a path whose pieces land later than its estimates say, as a
// lossy path's do when a packet of theirs is lost).
type pacedHost struct {
	object []byte
	rate   []float64
	rtt    time.Duration
	late   map[int]time.Duration

	mu      sync.Mutex
	fetched map[int]int64 // bytes per path that landed
	asked   map[int]int64 // bytes per path requested, landed or not
	nexts   [][2]int64    // the [off, end] of each request sent ahead of its path's queue (Fetch's next)
	inOrder bool          // PathState.InOrder of every path (the pacing is round-robin-like either way)
	blocked int
	// links: one per path, a token its pieces take in turn (they share
	// its rate); a channel, not a mutex: a goroutine waiting on a mutex
	// does not let synctest's clock advance.
	links map[int]chan struct{}
	// up, if set, is how many of the paths the client has now (a path
	// added later: TestStripeJoinsNewPath); unset, all of them.
	up atomic.Int32
}

func (h *pacedHost) Paths() int {
	if n := int(h.up.Load()); n > 0 {
		return n
	}
	return len(h.rate)
}

func (h *pacedHost) Pins(from, to int) []int { return twoEach(from, to) }

func (h *pacedHost) Path(id int) (PathState, bool) {
	return PathState{RTT: h.rtt, Rate: h.rate[id], InOrder: h.inOrder}, true
}

func (h *pacedHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	off, end, err := r.Open(func() error { return nil })
	if err != nil {
		return nil, err
	}
	b := h.object[off : end+1]
	h.mu.Lock()
	h.asked[pin] += int64(len(b))
	if r.Next {
		h.nexts = append(h.nexts, [2]int64{off, end})
	}
	h.mu.Unlock()
	if !sleepCtx(ctx, h.rtt+h.late[pin]) {
		return nil, ctx.Err()
	}
	h.mu.Lock()
	link := h.links[pin]
	h.mu.Unlock()
	select { // the path's rate, one piece after another
	case link <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ok := sleepCtx(ctx, time.Duration(float64(len(b))/h.rate[pin]*float64(time.Second)))
	<-link
	if !ok {
		return nil, ctx.Err()
	}
	r.Received(len(b))
	h.mu.Lock()
	h.fetched[pin] += int64(len(b))
	h.mu.Unlock()
	return b, nil
}

func (h *pacedHost) Reinjected() {}

func (h *pacedHost) EndgameCopied(int64) {}

func (h *pacedHost) Blocked() { h.mu.Lock(); h.blocked++; h.mu.Unlock() }

func (h *pacedHost) Measured(int, float64) {}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// stripeLate stripes size bytes over a 10 : 1 pair of paths whose slow
// one is late by late on every piece; it returns the bytes requested on
// the slow path and how many of its pieces blocked the window (Host.Blocked).
func stripeLate(t *testing.T, late time.Duration) (slowBytes int64, blocked int) {
	synctest.Test(t, func(t *testing.T) {
		const size = 8 << 20
		h := &pacedHost{object: object(size), rate: []float64{10e6, 1e6}, rtt: 20 * time.Millisecond,
			late: map[int]time.Duration{1: late}, fetched: map[int]int64{}, asked: map[int]int64{}, links: map[int]chan struct{}{0: make(chan struct{}, 1), 1: make(chan struct{}, 1)}}
		s := Start(context.Background(), h, 0, 0, size)
		deliverWhole(t, s, h.object)
		slowBytes, blocked = h.asked[1], h.blocked
	})
	return slowBytes, blocked
}

// TestStripeBlockingDetected: the event that raises a stripe's λ
// (BLEST) is detected where it happens and nowhere else. A slower path
// whose pieces land 400 ms later than its estimates say, while the fast
// path waits on the window, blocks (Host.Blocked); the same path on time
// never does, though the app waits on its pieces too. What λ then does
// to the path's pieces is stripesched's TestTakeLambda.
func TestStripeBlockingDetected(t *testing.T) {
	onTime, b0 := stripeLate(t, 0)
	late, b1 := stripeLate(t, 400*time.Millisecond)
	t.Logf("slow path on time: %d bytes asked, %d blocked; late 400 ms: %d bytes asked, %d blocked", onTime, b0, late, b1)
	if b0 > 0 {
		t.Errorf("%d pieces blocked with the slow path on time, want none", b0)
	}
	if b1 == 0 {
		t.Errorf("late path: no piece blocked (%d bytes asked)", late)
	}
}

// TestRateEst: bytes count as they arrive; a period the stripe kept short
// of two round trips at the measured rate (app-limited) only raises the
// estimate, one with a longer queue sets it either way.
func TestRateEst(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var e rateEst
	e.got(1<<20, ms(10), 0)
	if e.rate != 0 {
		t.Fatalf("idle path measured %g", e.rate)
	}
	// 1 MB queued on a 100 ms path; 1 MB in 0.5 s: 2 MB/s, and the
	// queue (1 MB) ≥ 2 × 2 MB/s × 0.1 s: path-limited.
	e.idle(t0)
	e.peak, e.rtt = 1e6, 100*time.Millisecond
	e.got(1e6, ms(500), 0)
	if e.rate != 2e6 {
		t.Fatalf("rate %g, want 2e6", e.rate)
	}
	e.landed(t0)
	// A new period with 60 kB queued, all in within two round trips:
	// 0.4 MB/s, app-limited (60 kB < 2 × 0.4 MB/s × 0.1 s): kept at 2 MB/s.
	e.idle(ms(1000))
	e.peak = 60e3
	e.got(60e3, ms(1150), 0)
	if e.rate != 2e6 {
		t.Fatalf("app-limited sample lowered the rate to %g", e.rate)
	}
	e.landed(t0)
	// The same with 1 MB queued: path-limited, the rate falls.
	e.idle(ms(2000))
	e.peak = 1e6
	e.got(200e3, ms(2200), 0)
	if e.rate != 1e6 {
		t.Fatalf("rate %g, want 1e6", e.rate)
	}
}

// TestOriginalBurstNotARate: bytes that queued in the original's stream
// while its headers were handled reach the stripe in a burst right after
// Start. Within the path's first round trip they are no sample of its
// rate: on sockets 52 kB in 0.2 ms read a 10 MB/s path at 297 MB/s, and
// the original's extensions, sized by that (Run.take), took the whole
// object before the other path asked for anything. Both an original on
// the swiftest path, which extends at once (a new period: ask), and one
// on a slower path, which owes the rest of the object by the client's
// count and asks for nothing.
func TestOriginalBurstNotARate(t *testing.T) {
	for _, orig := range []int{0, 1} {
		synctest.Test(t, func(t *testing.T) {
			const size, from, chunk = 16 << 20, 256 << 10, 32 << 10
			// 10 MB/s, 10 ms round trips; path 0 12 MB/s
			h := &fasterHost{fakeHost: newFakeHost(2, object(size), -1), orig: orig, owed: size - from}
			s := Start(context.Background(), h, orig, from, size)
			for n := int64(0); n < 192<<10; n += chunk { // 192 kB in 3 ms
				time.Sleep(500 * time.Microsecond)
				s.Original(n, chunk)
			}
			s.mu.Lock()
			rate := s.est[orig].rate
			s.mu.Unlock()
			s.Abandon()
			if rate > 1.5*10e6 {
				t.Fatalf("the original's path %d read %.3g B/s from its first 3 ms", orig, rate)
			}
		})
	}
}

// fasterHost is fakeHost whose path 0 is the swiftest (12 MB/s) and
// whose path orig owes owed bytes of the original response.
type fasterHost struct {
	*fakeHost
	orig int
	owed int64
}

func (h *fasterHost) Path(id int) (PathState, bool) {
	st, ok := h.fakeHost.Path(id)
	if id == 0 {
		st.Rate = 12e6
	}
	if id == h.orig {
		st.Outstanding = h.owed
	}
	return st, ok
}

// owedHost is fakeHost whose paths still owe owed bytes of the original
// response (PathState.Outstanding), and which records when the first
// piece was requested.
type owedHost struct {
	*fakeHost
	owed  int64     // guarded by fakeHost.mu
	first time.Time // guarded by fakeHost.mu
}

func (h *owedHost) Path(id int) (PathState, bool) {
	st, ok := h.fakeHost.Path(id)
	h.mu.Lock()
	st.Outstanding = h.owed
	h.mu.Unlock()
	return st, ok
}

func (h *owedHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	h.mu.Lock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	h.mu.Unlock()
	return h.fakeHost.Fetch(ctx, pin, r)
}

// TestStripeAsksOnceOriginalStops: a path whose queue is the original
// response's remainder (here a stripe from 0, whose path owes the whole
// object by the client's count) gets no piece; once the original has
// stopped (its path owes nothing) and Deliver begins, the path's workers
// ask at once, not at their next poll (worthPoll).
func TestStripeAsksOnceOriginalStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 4 << 20
		h := &owedHost{fakeHost: newFakeHost(1, object(size), -1), owed: size}
		s := Start(context.Background(), h, 0, 0, size)
		time.Sleep(worthPoll + worthPoll/4) // the path owes the rest; the workers poll in between
		h.mu.Lock()
		h.owed = 0
		h.mu.Unlock()
		stopped := time.Now()
		deliverWhole(t, s, h.object)
		if h.first.Before(stopped) || h.first.After(stopped) {
			t.Fatalf("first piece asked %v after the original stopped, want at once", h.first.Sub(stopped))
		}
	})
}

// playOriginal plays the original stream at rate bytes/s on fake time:
// it reports its progress chunk by chunk, as ct-client's copy loop does,
// until it reaches the stripe's cut, which it returns.
func playOriginal(s *Run, rate float64) int64 { return playOriginalBy(s, rate, 32<<10) }

// playOriginalBy is playOriginal reporting every chunk bytes (a crawling
// stream's reads are a packet or two).
func playOriginalBy(s *Run, rate float64, chunk int64) int64 {
	var n int64
	for {
		cut := s.Original(n, chunk)
		if n+chunk >= cut {
			return cut
		}
		n += chunk
		time.Sleep(seconds(float64(chunk) / rate))
	}
}

// guessHost is fakeHost whose path 1 is slow and far with no measured
// rate (its first congestion window over its round trip: a guess), and
// which records the first offset requested on each path.
type guessHost struct {
	*fakeHost
	first map[int]int64 // first offset requested per path
}

func (h *guessHost) Path(id int) (PathState, bool) {
	if id == 1 {
		return PathState{RTT: 100 * time.Millisecond, Cwnd: 12000}, true
	}
	return PathState{RTT: 10 * time.Millisecond, Rate: 10e6}, true
}

func (h *guessHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	open := r.Open
	r.Open = func(o func() error) (int64, int64, error) {
		off, end, err := open(o)
		h.mu.Lock()
		if _, ok := h.first[pin]; !ok && err == nil {
			h.first[pin] = off
		}
		h.mu.Unlock()
		return off, end, err
	}
	if pin == 1 {
		time.Sleep(200 * time.Millisecond) // slow: its pieces land late
	}
	return h.fakeHost.Fetch(ctx, pin, r)
}

// TestStripeOriginalRunsOn: beside a slower path, the original stream
// runs on as the fast path's share (past half the object; its path's
// pieces are the second copies of late ones at the end), and the
// slower path, its rate first a guess, takes its pieces from the object's
// far end, not the next bytes the app needs; the object arrives whole
// and in order.
func TestStripeOriginalRunsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1.6 s of the fast path: the slower path's probe (0.37 s at its
		// guess) lands before the fast path would deliver the rest, so the
		// ECF rule never refuses it (stripesched.Take's rule 4).
		const size, from = 16 << 20, 256 << 10
		h := &guessHost{fakeHost: newFakeHost(2, object(size), -1), first: map[int]int64{}}
		s := Start(context.Background(), h, 0, from, size)
		cut := playOriginal(s, 10e6)
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, cut)
		s.Abandon()
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object[cut:]) {
			t.Fatalf("delivered to %d of %d: %v (intact %v)", n, size, err, bytes.Equal(w.Body.Bytes(), h.object[cut:]))
		}
		off, ok := h.first[1]
		if !ok || off < size/2 {
			t.Fatalf("the guessed path's first piece at %d (requested %v), want one from the far end of %d bytes", off, ok, size)
		}
		if cut < size/2 {
			t.Fatalf("the original stopped at %d of %d (pieces: %d bytes on its path, %d on the other), want it to run on", cut, size, h.fetched[0], h.fetched[1])
		}
	})
}

// TestShareLinks: the lanes of one link together claim no more than the
// link delivered to them, or, before the stripe measured it, than their
// best lane's estimate; a link that delivers more than they claim and a
// path alone on its link keep their rates.
func TestShareLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links map[int]string
		rates map[int]float64
		link  map[string]float64 // measured delivery per link
		want  map[int]float64
	}{
		{"lanes over their link: scaled", map[int]string{0: "a", 1: "b", 2: "b", 3: "b"},
			map[int]float64{0: 10e6, 1: 2e6, 2: 2e6, 3: 1e6}, map[string]float64{"a": 10e6, "b": 4e6},
			map[int]float64{0: 10e6, 1: 1.6e6, 2: 1.6e6, 3: 0.8e6}},
		{"lanes under their link: kept", map[int]string{0: "b", 1: "b"},
			map[int]float64{0: 1e6, 1: 1e6}, map[string]float64{"b": 4e6}, map[int]float64{0: 1e6, 1: 1e6}},
		{"alone on its link: kept", map[int]string{0: "a"},
			map[int]float64{0: 10e6}, map[string]float64{"a": 5e6}, map[int]float64{0: 10e6}},
		{"link not measured: its best lane's", map[int]string{0: "b", 1: "b", 2: "b"},
			map[int]float64{0: 2e6, 1: 1e6, 2: 1e6}, nil, map[int]float64{0: 1e6, 1: 0.5e6, 2: 0.5e6}},
		{"link not measured, one lane: kept", map[int]string{0: "b", 1: "a"},
			map[int]float64{0: 3e6, 1: 3e6}, nil, map[int]float64{0: 3e6, 1: 3e6}},
		{"no link named: kept", map[int]string{0: "", 1: ""},
			map[int]float64{0: 3e6, 1: 3e6}, map[string]float64{"": 1e6}, map[int]float64{0: 3e6, 1: 3e6}},
	} {
		s := &Run{links: tc.links, link: map[string]*linkMeter{}}
		for l, r := range tc.link {
			s.link[l] = &linkMeter{est: rateEst{rate: r}}
		}
		all := map[int]stripesched.Path{}
		for id, r := range tc.rates {
			all[id] = stripesched.Path{Rate: r, Peak: r}
		}
		s.shareLinks(all)
		for id, want := range tc.want {
			if got := all[id]; math.Abs(got.Rate-want) > 1 || math.Abs(got.Peak-want) > 1 {
				t.Errorf("%s: path %d rate %.0f peak %.0f, want %.0f", tc.name, id, got.Rate, got.Peak, want)
			}
		}
	}
}

// TestStripeTakesOverAFailedOriginal: the original stream runs on as its
// path's share (take) and its path fails after 4 MB, short of its cut;
// the stripe fetches the original's rest itself, on the other path (a
// second copy may then win on the first, which the fake never fails), and
// the app gets the whole object in order.
func TestStripeTakesOverAFailedOriginal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, from, failAt, chunk = 16 << 20, 256 << 10, 4 << 20, 32 << 10
		h := &guessHost{fakeHost: newFakeHost(2, object(size), -1), first: map[int]int64{}}
		s := Start(context.Background(), h, 0, from, size)
		defer s.Abandon()
		var n, cut int64
		for n < failAt {
			if cut = s.Original(n, chunk); n+chunk >= cut {
				t.Fatalf("the original stopped at %d, before %d: the test needs it running on", cut, failAt)
			}
			n += chunk
			time.Sleep(seconds(chunk / 10e6))
		}
		if !s.TakeOver(n) {
			t.Fatal("TakeOver refused a running stripe")
		}
		s.mu.Lock()
		first := *s.pieces[0]
		s.mu.Unlock()
		if first.off != n || first.end != cut-1 || first.path != 1 {
			t.Errorf("first piece [%d, %d] on path %d, want the original's rest [%d, %d] on path 1", first.off, first.end, first.path, n, cut-1)
		}
		w := httptest.NewRecorder()
		got, err := s.Deliver(w, n)
		if err != nil || got != size || !bytes.Equal(w.Body.Bytes(), h.object[n:]) {
			t.Fatalf("delivered to %d of %d: %v (intact %v)", got, size, err, bytes.Equal(w.Body.Bytes(), h.object[n:]))
		}
	})
}

// TestStripeOriginalOffACrawlingPath: the original stream on a path that
// delivers it at a crawl (one connection of a lossy link beside its
// sibling lanes: ~0.1 MB/s on sockets, the matrix's lossy row, while the
// client's estimate of the lane says more) has all its remainder fetched
// by the fast path as soon as the stripe starts: the download takes no
// longer than on the fast path alone. Before, the fast path asked for it
// only once its workers came back from their pieces (1.12 s; the fast
// path alone 0.84), and a cut set by the lane's estimate left the app
// waiting on the crawl for the bytes before it (1.34 s).
func TestStripeOriginalOffACrawlingPath(t *testing.T) {
	for _, c := range []struct {
		name  string
		crawl float64 // bytes/s of the original
		chunk int64   // bytes per progress report of the original
	}{
		{"0.1 MB/s in 32 KiB reads", 0.1e6, 32 << 10},
		{"0.05 MB/s in 2 KiB reads", 0.05e6, 2 << 10},
	} {
		for _, inOrder := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, in order %v", c.name, inOrder), func(t *testing.T) { originalOffACrawl(t, c.crawl, c.chunk, inOrder) })
		}
	}
}

// originalOffACrawl stripes 8 MB over a 10 MB/s path and one the client
// estimates at 1 MB/s, the original on the latter delivering crawl
// bytes/s in chunk-byte reads; it fails if that takes over 1.1 × the
// fast path alone, or if the original's rest is not the one request sent
// ahead (inOrder: PathState.InOrder) or any is (not inOrder).
func originalOffACrawl(t *testing.T, crawl float64, chunk int64, inOrder bool) {
	synctest.Test(t, func(t *testing.T) {
		const size, from, fast = 8 << 20, 256 << 10, 10e6
		h := &pacedHost{object: object(size), rate: []float64{fast, 1e6}, rtt: 20 * time.Millisecond,
			fetched: map[int]int64{}, asked: map[int]int64{}, links: map[int]chan struct{}{0: make(chan struct{}, 1), 1: make(chan struct{}, 1)}, inOrder: inOrder}
		start := time.Now()
		s := Start(context.Background(), h, 1, from, size)
		cut := playOriginalBy(s, crawl, chunk)
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, cut)
		s.Abandon()
		took := time.Since(start)
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object[cut:]) {
			t.Fatalf("delivered to %d of %d: %v", n, size, err)
		}
		alone := seconds(size / fast)
		t.Logf("took %v (fast path alone %v), the original cut at %d", took, alone, cut)
		if took > alone*11/10 {
			t.Fatalf("took %v, over 1.1 × the fast path alone (%v); the original was cut at %d", took, alone, cut)
		}
		// The original's rest, and nothing else, goes ahead of the fast
		// path's pieces: the app waits on it now (wire.HdrPiece); none
		// where the host's sender does not keep the order.
		want := [][2]int64{{cut, from - 1}}
		if !inOrder {
			want = nil
		}
		if !slices.Equal(h.nexts, want) {
			t.Errorf("requests sent ahead of their path's queue %v, want the original's rest %v", h.nexts, want)
		}
	})
}

// TestRunDue: a head piece's due time counts the pieces its path sends
// before it where the host's sender keeps the order (PathState.InOrder: the
// one asked before it and the original's rest, marked next), and every
// piece in flight there, round-robin, where it does not.
func TestRunDue(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	mk := func(size int64, start time.Time, next bool) *piece {
		return &piece{end: size - 1, start: start, next: next, running: 1}
	}
	before := mk(300e3, at(0), false)
	h := mk(101e3, at(1), false)
	h.rx = 1e3 // 100 kB to come, its first byte in
	after := mk(500e3, at(2), false)
	rest := mk(50e3, at(3), true)
	all := map[int]stripesched.Path{0: {RTT: 20 * time.Millisecond, Rate: 1e6}}
	for _, c := range []struct {
		inOrder bool
		want    float64
	}{
		{true, 0.45},  // 300 + 50 kB ahead, then its 100
		{false, 0.35}, // 100 of each of the three beside it (50 of the rest), and its own
	} {
		s := &Run{inOrder: map[int]bool{0: c.inOrder}, pieces: []*piece{rest, before, h, after}}
		if got := s.due(h, all, at(10)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("in order %v: due = %g s, want %g", c.inOrder, got, c.want)
		}
	}
}

// deliverWhole delivers s's object to a recorder, ends s, and fails the
// test unless every byte of object arrived intact.
func deliverWhole(t *testing.T, s *Run, object []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	n, err := s.Deliver(w, 0)
	s.Abandon()
	if err != nil || n != int64(len(object)) || !bytes.Equal(w.Body.Bytes(), object) {
		t.Fatalf("delivered to %d of %d: %v (intact %v)", n, len(object), err, bytes.Equal(w.Body.Bytes(), object))
	}
}
