// Package stripe runs a striped download: one large response fetched over
// several of ct-client's paths at once in Range pieces and handed to the app
// in order. Package stripesched is its policy (piece size, reorder window,
// which path takes a piece, reinjection); this package keeps the pieces,
// the workers per path, each path's measured rate and the reinjection of
// the original stream's remainder. It is apart from the client, which it
// reaches through Host only: the client fetches pieces, reports its paths'
// state and counts reinjections.
package stripe

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/stripesched"
	"github.com/hetquic/hetquic/internal/pauseclock"
)

// Host is what a stripe needs of the client.
type Host interface {
	// Paths is the number of the client's paths; their IDs are 0..n-1.
	// It may grow during a stripe (a lane added, a reload), never shrink.
	Paths() int
	// Pins lists the workers (a path ID each, as Start's pins) for paths
	// from..to-1, added since the stripe began.
	Pins(from, to int) []int
	// Path is path id's state now; up is false while it has no live
	// connection.
	Path(id int) (st PathState, up bool)
	// Fetch gets one piece on path pin (moving like any request if that
	// path fails): the bytes [off, end] that r.Open returns once the
	// request has its stream.
	Fetch(ctx context.Context, pin int, r Request) ([]byte, error)
	// Reinjected counts a piece (or the original's remainder) requested
	// again on a faster path: the app waits on it (the head) or the
	// original's rest, which the app reads in order, is moved.
	Reinjected()
	// EndgameCopied counts a slower path's far piece of size bytes
	// copied to an idle path once every byte is requested (Run.unload).
	// Not a reinjection: it fires at the end of many downloads with no
	// fault, and nothing held the app up yet.
	EndgameCopied(size int64)
	// Blocked counts a slower path's piece that blocked the window (it
	// raised the stripe's λ: stripesched.NextLambda).
	Blocked()
	// Measured reports, as the stripe ends, the rate (bytes/s) it
	// measured on path id (rateEst; Run.report says which paths), for
	// the client's own estimate (PathState.Rate), which the next stripe
	// starts from.
	Measured(id int, rate float64)
}

// Request is one piece request, as Host.Fetch makes it.
type Request struct {
	// Next (only where InOrder): the app waits on these bytes now (the
	// original's rest), so the path is to send them before the pieces
	// asked before them; the others it sends in the order asked
	// (wire.HdrPiece).
	Next bool
	// Open opens the request's stream with open, each time it needs one
	// (a request that moves to another path opens another), and returns
	// the bytes [off, end] to ask for there, always the same. For a
	// piece taken in its path's order they are not known until its
	// stream is open (Run.claim).
	Open func(open func() error) (off, end int64, err error)
	// Received hears of each write of the response's body, once Open
	// has returned its range.
	Received func(n int)
}

// PathState is what the client knows of one path.
type PathState struct {
	RTT         time.Duration // smoothed RTT of its connection
	Rate        float64       // the client's delivery-rate estimate, bytes/s (0: none yet)
	Cwnd        int64         // congestion window, bytes: Cwnd/RTT stands for a rate not yet measured
	Outstanding int64         // response bytes the path still owes the client
	// HeldUntil: before then the path gets no new pieces while another
	// path of the stripe is usable (suspected of a stall, or back from a
	// loss and not yet healthy for the client's failback hold).
	HeldUntil time.Time
	// Link names the link the path shares with the other paths of the
	// same Link (the lanes of one interface); "": a link of its own.
	Link string
	// StreamWindow is the receive window of one of the path's streams
	// (0: unbounded): the most of a stream's bytes in flight, so the
	// original's stream delivers at most that per round trip (take).
	StreamWindow int64
	// FirstWindow is the receive window each new stream of the path
	// starts with (0: unbounded), which a piece's stream grows from:
	// take cuts pieces to fit it (stripesched.WindowPiece).
	FirstWindow int64
	// MinRTT is the least round trip of the path's connection: without
	// the queue's delay, which a window need not cover (extension).
	MinRTT time.Duration
	// InOrder: the path's sender sends its pieces in the order asked
	// and those marked next first (the ct-server of its connection
	// advertised it: wire.HdrPieceOrder). Otherwise it sends them
	// round-robin, as QUIC does a connection's streams by default, and
	// the stripe judges the path by that (stripesched.DueRoundRobin, no
	// Path.Ahead): counting on an order an old ct-server did not keep,
	// 8 MiB took 0.75–1.14 s on fake time against 0.77–0.84. Per path:
	// its connection may reach another ct-server than the others'.
	InOrder bool
}

// Start begins fetching bytes [from, total) with the workers host.Pins
// gives its paths (a path down or held now waits, and takes pieces again
// once it is usable: failback; a path added later joins: join) while the
// original response's own stream, on origPath, still delivers the bytes
// before from: waiting for those first (on what
// may be the slowest path) before asking for the rest once cost a stripe
// most of its gain. Deliver hands the rest to the app; Abandon stops it.
func Start(ctx context.Context, host Host, origPath int, from, total int64) *Run {
	return start(ctx, host, origPath, from, total, pauseclock.New(pauseTick))
}

// start is Start with the pause clock's ticker (pauses) given.
func start(ctx context.Context, host Host, origPath int, from, total int64, tick pauseclock.Ticker) *Run {
	ctx, cancel := context.WithCancel(ctx)
	known := host.Paths()
	pins := host.Pins(0, known)
	s := &Run{host: host, ctx: ctx, cancel: cancel, total: total, known: known, inOrder: map[int]bool{},
		next: from, end: total, delivered: from, from: from, cutAt: from, origPath: origPath, began: time.Now(), kick: make(chan struct{}),
		staffed: map[int]int{}, queued: map[int]int64{}, est: map[int]*rateEst{}, orders: map[int]*order{}, links: map[int]string{}, windows: map[int]streamWindow{}, link: map[string]*linkMeter{},
		pauses: &pauses{}}
	s.pauses.start(s.began)
	s.wg.Go(func() { s.pauses.run(ctx, tick) })
	for _, pin := range pins {
		s.staffed[pin]++
	}
	if from > 0 {
		e := s.rate(origPath)
		e.idle(s.began) // the original keeps its path busy (credit)
		if st, ok := host.Path(origPath); ok {
			e.hold = s.began.Add(st.RTT) // no sample in its first round trip (got)
		}
	}
	for _, pin := range pins {
		s.wg.Go(func() { s.work(pin) })
	}
	return s
}

// piece is bytes [off, end] of a striped object, requested on one path
// and, if it held the app up, again on a faster one (the first copy in
// wins and cancels the other).
type piece struct {
	off, end int64
	path     int       // the path of its first request
	start    time.Time // when it was first requested
	slower   bool      // another path had a higher rate when it was taken (stripesched.Swiftest)
	expect   time.Time // when its path's estimates said it would land
	copies   int       // requests made for it (guarded by Run.mu)
	again    time.Time // when its second copy was to land (holder; guarded by Run.mu)
	running  int       // of them still running (guarded by Run.mu)
	ctx      context.Context
	cancel   context.CancelFunc
	data     []byte
	err      error
	done     chan struct{} // closed once data or err is set
	landed   bool          // done is closed (guarded by Run.mu)
	rx       int64         // bytes of its first copy received (guarded by Run.mu)
	// next: the original's rest, which the app waits on now (Host.Fetch).
	// A second copy of the head piece is not: sent ahead of its path's
	// queue it pushed that path's own pieces back, and on fake time the
	// 80/40 + 40/10 (1 %) mix took 1.33–1.86 s for 16 MiB against
	// 1.28–1.45 without.
	next bool
	// moved: the original's rest, moved off the original's path as it
	// crawled (reinjectPrefix, Run.crawled): that path never requests
	// it again (holder).
	moved bool
	// ordered: a piece take gave its path (not next, no second copy),
	// whose first request takes the bytes of whichever such piece of the
	// path is first when its stream opens (order).
	ordered bool
}

func (p *piece) size() int64 { return p.end - p.off + 1 }

// order is one path's pieces taken in order (piece.ordered) whose
// requests have no stream yet, in the order taken, and the turn to open
// a stream there. ct-server sends a path's pieces by stream ID (InOrder),
// and the workers that take pieces at one instant race to open their
// streams: in one run in three or four on the 80/40 + 40/10 (1 %) mix on
// fake time the piece holding the app's next bytes opened after the two
// taken with it and landed last, and the app got its first byte past the
// head at ~315 ms, not ~155. Making each request wait for the one taken
// before it on its path to open its stream removed that mode and slowed
// whole downloads (16 MiB: 1.34–1.94 s in 20 runs against 1.32–1.70): a
// request then waited on another worker's way to its stream (a path
// pick, a stream slot). Here no request waits for another: whichever
// opens a stream first asks for the first piece in line, so stream IDs
// follow the order taken, and the turn is held only across the open
// itself.
type order struct {
	waiting []*piece
	turn    chan struct{} // one slot: held from a stream's open to its claim
}

// Run is one striped download in progress.
type Run struct {
	host   Host
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	total  int64
	// The original response's stream delivers the bytes before the
	// first piece (from) itself, on path origPath; origAt is how far it
	// got and cutAt where it is to stop: from, further as its own path
	// extends it (take), or sooner once a faster path fetches its
	// remainder (prefix).
	from, origAt, cutAt int64
	origPath            int
	began               time.Time // when the original's head arrived
	prefix              bool      // the remainder was requested on another path
	// crawled: the remainder was moved off a path that crawled with its
	// queue empty (reinjectPrefix, lossLimited): that path takes from
	// the far end (take) and never copies the remainder back (holder).
	crawled bool

	mu          sync.Mutex
	origStopped bool  // the original reached cutAt
	origGot     int64 // the original's bytes counted toward its path (credit)
	extMark     int64 // credit wakes the workers once the extension owed is down to this
	next        int64 // first byte not yet requested
	// end is where the pieces requested in order stop; tail holds the
	// pieces from there to the object's end, taken from its far end
	// (take), in order, until next reaches end (joinTail).
	end       int64
	tail      []*piece
	delivered int64         // first byte not yet given to the app
	pieces    []*piece      // requested and not yet given to the app, in order
	kick      chan struct{} // closed and replaced when a piece lands or is delivered
	running   int           // piece requests in progress
	staffed   map[int]int   // workers per path
	known     int           // the host's paths the stripe has workers for (join)
	queued    map[int]int64 // bytes requested per path and not yet received
	est       map[int]*rateEst
	orders    map[int]*order        // per path: its ordered pieces waiting for a stream
	links     map[int]string        // path → its PathState.Link, as last seen
	windows   map[int]streamWindow  // path → its PathState.StreamWindow and MinRTT, as last seen
	inOrder   map[int]bool          // path → its PathState.InOrder, as last seen
	link      map[string]*linkMeter // a shared link's delivery (shareLinks)
	// lambda is the stripe's BLEST λ (stripesched.NextLambda), learnt
	// from its slower paths' pieces; windowAt is the last time the
	// window alone kept the path of the highest rate from requesting
	// (stripesched.WindowBound, stripesched.Swiftest).
	lambda   float64
	windowAt time.Time
	reported bool    // report ran
	pauses   *pauses // when the process did not run; nil: never (a test's Run)
}

// Abandon stops a stripe whose original response failed before its first
// piece: the fetch moves on as any other.
func (s *Run) Abandon() {
	s.cancel()
	s.wg.Wait()
	s.report()
}

// report gives the host each path's rate as this stripe measured it
// (Host.Measured), once. The client samples a path's rate only from a
// response of rateSampleBytes (agent/client.go) or more, and a slower
// path's pieces in a short stripe are smaller: on sockets the matrix's
// halving row began its measured stripe with its 50 Mbit/s path never
// measured after 18 warm-up stripes, so the policy guessed it from its
// congestion window, asked it for a 32 KiB probe, and it delivered
// 0.7, 2.4 and 4.4 of its 6.1 MB/s in the first three 50 ms.
// A path still in its start-up (Ramp) reports only if the client has no
// rate for it at all: its estimate still counts the ramp and reads it
// low, but a low measurement beats a guess, and the stripes that ramp it
// fully raise it later (in 2 of 40 runs of TestStripeTeachesPathRate the
// slow path carried only probes in all three stripes and ramped in none).
func (s *Run) report() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reported {
		return
	}
	s.reported = true
	for id, e := range s.est {
		if e.rate <= 0 {
			continue
		}
		if st, _ := s.host.Path(id); e.ramp.Full || st.Rate <= 0 {
			s.host.Measured(id, e.rate)
		}
	}
}

// Original is the original stream's progress: it has given the app n
// bytes and holds k more; it returns where it is to stop. Once n+k
// reaches that the original counts as stopped and is never extended
// again: a cut moved after the copy loop stopped would leave a hole.
func (s *Run) Original(n, k int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.credit(min(n+k, s.cutAt))
	s.delivered = max(s.delivered, n)
	s.origAt = n
	if n+k >= s.cutAt {
		s.origStopped = true
	}
	return s.cutAt
}

// Deliver writes the pieces to w in order as they land; it returns the
// offset reached and why it stopped short, if it did.
func (s *Run) Deliver(w http.ResponseWriter, written int64) (int64, error) {
	rc := http.NewResponseController(w)
	// The original stream has stopped, and its path no longer owes the
	// rest of the object it was counted for (its whole Content-Length,
	// PathState.Outstanding): its workers, which that queue kept waiting,
	// look again now, not at their next poll (worthPoll). The fast path
	// of 100 Mbit/s/10 ms + 2 Mbit/s/200 ms idled up to that poll after
	// the original's last byte: 8 MB took 862 ms on fake time against
	// 843 ms so (835 alone).
	s.mu.Lock()
	s.wake()
	s.mu.Unlock()
	for written < s.total {
		p, err := s.head()
		if err != nil {
			return written, err
		}
		if p.end < written { // the original stream got there first
			p.cancel()
			s.pop(written)
			continue
		}
		if err := s.await(p); err != nil {
			return written, err
		}
		if _, err := w.Write(p.data[written-p.off:]); err != nil {
			return written, err
		}
		rc.Flush()
		written = p.end + 1
		p.data = nil
		s.pop(written)
	}
	return written, nil
}

// await waits for head piece p to land and, for a slower path's piece,
// updates λ: it blocked if it landed later than its path's estimates
// said, the app waited for it, and meanwhile the window kept the path of
// the highest rate from requesting. A piece on time that the app waited
// for is not the estimates' error but the window's size: a path whose
// rate just fell (its estimate lags by up to span) blocks with the
// other path's pieces on time, and growing λ then starved the path that
// was right.
func (s *Run) await(p *piece) error {
	var waited time.Time
	select {
	case <-p.done:
	default:
		waited = time.Now()
		select {
		case <-p.done:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	if p.err != nil {
		return p.err
	}
	if p.slower {
		s.mu.Lock()
		now := time.Now()
		blocked := !waited.IsZero() && !s.windowAt.Before(waited) && now.After(p.expect)
		s.lambda = stripesched.NextLambda(s.lambda, blocked)
		s.mu.Unlock()
		if blocked {
			s.host.Blocked()
		}
	}
	return nil
}

// pop drops the head piece: the app has the bytes before written.
func (s *Run) pop(written int64) {
	s.mu.Lock()
	s.pieces = s.pieces[1:]
	s.delivered = max(s.delivered, written)
	s.wake()
	s.mu.Unlock()
}

// head waits for the next piece the app needs to be requested.
func (s *Run) head() (*piece, error) {
	for {
		s.mu.Lock()
		if len(s.pieces) > 0 {
			p := s.pieces[0]
			s.mu.Unlock()
			return p, nil
		}
		k := s.kick
		s.mu.Unlock()
		select {
		case <-k:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// wake tells waiting workers and the writer that something changed; mu held.
func (s *Run) wake() {
	close(s.kick)
	s.kick = make(chan struct{})
}

// work is one worker on path pin: take pieces (or second copies of the
// piece holding the app up) while the policy allows, wait otherwise.
func (s *Run) work(pin int) {
	for {
		s.join()
		p, wait, poll, gone := s.decide(pin)
		switch {
		case gone:
			return
		case p != nil:
			s.fetch(pin, p)
		default:
			select {
			case <-wait:
			case <-time.After(poll):
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// join starts workers for the paths the client added since the stripe
// last looked (host.Paths grew: an automatic lane, a reload). A stripe
// that kept the paths of its start never used a lane that came up during
// it: on the matrix's lossy row on fake time, the lanes a warm-up's loss
// called for came 0.5–0.8 s into the measured download in 2 of 20 runs,
// and that download ran on one connection of the lossy path (1.35–1.40
// MB/s of its 5, against 3.6–4.0 with the lanes). A worker calls it
// before each decision; the new workers' own paths start as any path
// does, their rate a guess until their first piece measures it.
func (s *Run) join() {
	n := s.host.Paths()
	s.mu.Lock()
	from := s.known
	s.known = max(n, from)
	s.mu.Unlock()
	if n <= from {
		return
	}
	pins := s.host.Pins(from, n)
	s.mu.Lock()
	for _, pin := range pins {
		s.staffed[pin]++
	}
	s.mu.Unlock()
	for _, pin := range pins {
		s.wg.Go(func() { s.work(pin) }) // from a worker: the group is not empty, so Abandon's Wait sees it
	}
}

// How often a waiting worker looks again when nothing in the stripe
// changed. worthPoll: its paths' estimates move between pieces too.
// parkPoll: its path is down or held, which changes on the scale of the
// failback hold (seconds), and a parked worker should cost little CPU.
const (
	worthPoll = 20 * time.Millisecond
	parkPoll  = 100 * time.Millisecond
)

// decide is one worker's decision (on the swiftest measured path the
// original's rest first, then stripesched.Take, then stripesched.Reinject
// for the original's rest or the head piece): a piece to fetch, or a
// channel to wait on and how long at most, or gone when the stripe ended.
// A worker whose path is not usable (usable) parks until it is.
func (s *Run) decide(pin int) (p *piece, wait <-chan struct{}, poll time.Duration, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, nil, 0, true
	}
	now := time.Now()
	own, others, all, ok := s.views(pin, now)
	if !ok {
		if len(all) > 0 || s.running > 0 {
			return nil, s.kick, parkPoll, false
		}
		// No path of the stripe is up and nothing is on the way: a
		// piece, which moves like any request and waits for a path.
		own = stripesched.Path{Rate: pathchoice.DefaultRate}
	}
	swiftest := stripesched.Swiftest(own, others)
	prefixFirst := !own.Guess && swiftest
	if prefixFirst {
		// The original's remainder before any piece: the app needs it
		// first, and once this path's workers hold pieces none of them
		// looks again until one lands (on sockets the lossy row's fast
		// path reinjected it only after 150–220 kB of 256 KiB had crawled
		// over a lossy lane at ~0.1 MB/s).
		if p := s.reinjectPrefix(pin, own, all, now); p != nil {
			return p, nil, 0, false
		}
	}
	st := stripesched.Stripe{Window: stripesched.Window(append([]stripesched.Path{own}, others...), s.end-s.next),
		Ahead: s.next - s.delivered, Left: s.end - s.next, Lambda: s.lambda}
	if size := stripesched.Take(own, others, st); size > 0 {
		if p := s.take(pin, size, own, others, now); p != nil {
			return p, nil, 0, false
		}
		return nil, closedChan, 0, false
	}
	blocked := stripesched.WindowBound(own, st) && swiftest
	if blocked {
		s.windowAt = now
	}
	// The original's rest: unless asked above (nothing it reads has
	// changed), or its far part.
	if p := s.originalRest(pin, own, all, now, !prefixFirst); p != nil {
		return p, nil, 0, false
	}
	if h := s.holder(pin, own, all, now, blocked); h != nil {
		s.host.Reinjected()
		return s.start(pin, h, now, own.RTT), nil, 0, false
	}
	if p := s.unload(pin, own, all, now); p != nil {
		return p, nil, 0, false
	}
	if p := s.probe(pin, own, others, now); p != nil {
		return p, nil, 0, false
	}
	return nil, s.kick, worthPoll, false
}

// take requests size bytes on path pin, as stripesched.Take decided, or
// returns nil where the original stream takes them; mu held.
//
// The original's path, while it is the swiftest and nothing else was
// requested in order after the original, extends the original instead
// (cutAt): the original stream runs on as that path's share, with no
// request of its own. Cut at the stripe's first byte, it had the server
// send a round trip of bytes past the cut until STOP_SENDING landed
// (175–250 kB of 8 MB on the idle experiment's 100 Mbit/s path, traced
// by idle31) and its path idled a round trip for its next piece: 8 MB
// beside a useless 2 Mbit/s/200 ms path took 1.03 × the time alone on
// fake time, 0.99–1.00 × so.
//
// A slower path takes its piece from the object's far end (tail) while
// its rate is a guess or the original runs on, not the next bytes in
// order: those would cut the original, and the app needs them next, where
// a probe too slow to land in time held them until the fast path asked
// again (two or three reinjections a download). From the far end a piece
// lands long before the app gets there; the tail is bounded by MaxWindow,
// the memory the reorder window may hold. So does the original's path
// once the original's rest was moved off it as it crawled (Run.crawled:
// another path lands it sooner), swiftest or not: its estimate lags what made it
// slow, and its pieces taken in order right after the moved rest held the
// app as the original had (fake time, 60/60 + 40/20 Mbit/s/ms with 2 %
// loss on the near path, 8 MiB: 0.99–1.00 × the best path alone, 1.05
// so).
func (s *Run) take(pin int, size int64, own stripesched.Path, others []stripesched.Path, now time.Time) *piece {
	off := s.next
	swiftest := stripesched.Swiftest(own, others)
	if ext := s.extension(pin, size, own, swiftest); ext > 0 {
		size = ext
		s.next += size
		s.cutAt = s.next
		s.ask(pin, size, now, own.RTT)
		s.extMark = s.queued[pin] / 2
		s.joinTail()
		return nil
	}
	size = min(size, stripesched.WindowPiece(s.windows[pin].first)) // a piece is a new stream
	far := (!swiftest && (own.Guess || s.extending()) || s.crawled && pin == s.origPath) && s.end-s.next-size >= stripesched.MinPiece &&
		s.total-s.end+size <= stripesched.MaxWindow
	if far {
		off = s.end - size
	}
	ctx, cancel := context.WithCancel(s.ctx)
	p := &piece{off: off, end: off + size - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now,
		slower: !swiftest, expect: now.Add(seconds(own.Done(size)))}
	if far {
		s.end = off
		s.tail = append([]*piece{p}, s.tail...)
	} else {
		s.next += size
		s.pieces = append(s.pieces, p)
	}
	s.joinTail()
	p.ordered = true
	o := s.order(pin)
	o.waiting = append(o.waiting, p)
	return s.start(pin, p, now, own.RTT)
}

// extension is how much of size path pin, seen as own, extends the
// original by (take), 0 for none. Where the original's stream is
// window-bound (windowBound), only up to what its receive window holds
// beyond what the original has not yet given the app: one stream delivers
// at most a window per round trip, and a 1 MiB window on a 65 Mbit/s path
// 120 ms away holds less than a round trip. The original, extended by
// every piece of that path, took 16 MB beside a 7 Mbit/s path 25 ms away
// in 0.90 × the time on the fast path alone, against 0.80 with the fast
// path in pieces (several streams) from its first full window on (fake
// time; TestStripeHeadWhereItArrivesFirst). Not elsewhere: a path in
// pieces moves them to another path one by one where the original moves
// its whole rest at once (reinjectPrefix), and capped on every path the
// fastest of three paths, dropped 8× at 0.5 s, reached 0.88–0.90 of the
// offered sum, not 0.94 (TestStripeFollowsRateChange); mu held.
func (s *Run) extension(pin int, size int64, own stripesched.Path, swiftest bool) int64 {
	if pin != s.origPath || !swiftest || !s.extending() {
		return 0
	}
	sw := s.windows[pin]
	w := sw.bytes
	if w <= 0 || float64(w) >= windowBound*own.Rate*sw.minRTT.Seconds() {
		return size
	}
	if room := w - (s.cutAt - s.origGot); room >= min(size, stripesched.MinPiece) {
		return min(size, room)
	}
	return 0
}

// windowBound: a stream whose receive window is under this many of its
// path's bandwidth-delay products is window-bound (extension). The
// product is the rate times the least round trip: a window that covers it
// keeps the link busy, and the queue's delay needs no more window (its
// bytes are in flight anyway). Measured with the smoothed round trip, a
// 150 Mbit/s path 20 ms away read window-bound once its queue filled, and
// capped there the matrix's 10 : 1 rows lost 3 % on sockets (session 22).
// Twice: the rate estimate grows as it measures, and a window of one
// product already held the 65 Mbit/s, 120 ms path to about 6.5 MB/s of
// its 8.1.
const windowBound = 2

// streamWindow is what extension reads of a path: its streams' receive
// window and its least round trip; and what take cuts a piece to: the
// window a new stream starts with (first).
type streamWindow struct {
	bytes  int64
	minRTT time.Duration
	first  int64
}

// joinTail appends the tail's pieces to those in order once nothing is
// left between them; mu held.
func (s *Run) joinTail() {
	if s.next < s.end || len(s.tail) == 0 {
		return
	}
	s.pieces = append(s.pieces, s.tail...)
	s.next, s.end, s.tail = s.total, s.total, nil
	s.wake()
}

// staleAfter is how long a slower path may go without a piece of the
// stripe before its rate estimate counts as stale: a second, the most
// the estimator remembers (span) on a path worth striping over. Only
// pieces correct an estimate, and the policy gives pieces by the
// estimate, so a path whose first piece measured it low (a transient, a
// loaded CPU) got no piece for the rest of the download — the matrix's
// 2 : 1 row once left its 40 Mbit/s path at 0 % of the bytes.
const staleAfter = time.Second

// probe re-measures path pin when its estimate is stale (staleAfter) and
// the policy gives it nothing: it requests a second copy of the newest
// piece another path has in flight. The copy cannot hold the app up — the
// first copy still lands when it would, and whichever lands first is used
// (the ECF and BLEST rules hold whatever the probe finds) — and while it
// runs the path's bytes count toward its estimate as any piece's do; the
// losing copy is cancelled. A path that is as slow as its estimate said
// costs at most one such copy per staleAfter, on a path otherwise idle,
// counted in the time the process ran (pauses): a pause says nothing of
// a path's rate, and a path idle for less than staleAfter of it is not
// stale; mu held.
func (s *Run) probe(pin int, own stripesched.Path, others []stripesched.Path, now time.Time) *piece {
	e := s.est[pin]
	if e == nil || e.rate <= 0 || s.queued[pin] > 0 || now.Sub(e.quiet)-s.pauses.within(e.quiet, now) < staleAfter ||
		stripesched.Swiftest(own, others) || s.next >= s.end {
		return nil // not measured yet (Take's probing of a guess), busy, fresh, never starved, or nothing left to give it
	}
	for i := len(s.pieces) - 1; i >= 0; i-- {
		p := s.pieces[i]
		if !p.landed && p.copies == 1 && p.running == 1 && p.path != pin {
			return s.start(pin, p, now, own.RTT)
		}
	}
	return nil
}

// crawlQueue: a path whose smoothed RTT is at most this times its
// least crawls with its queue about empty, so where its rate fell, its
// sender fell back, not its link (lossLimited). The lanes' line between
// a random loss and a full queue (queueEmpty in package agent): a lossy
// near path read 1.01× its least RTT as it crawled, the first path of
// TestStripeRidesRateDrop's first row 4× before its drop and 8–20× after
// (fake time). Neither the client's loss counters nor ct-server's can
// say it in time: the loss is the server's sending's, and ct-server
// reports it (wire.HdrSendStats) only on a response's head, which the
// original's path, busy with the original, did not get from 0.1 s until
// the rest was moved (TestStripeLossyNearOriginal, 0.3 s).
const crawlQueue = 1.25

// lossLimited: a path of smoothed RTT rtt and least RTT minRTT has its
// queue about empty (crawlQueue); false while minRTT is unknown.
func lossLimited(rtt, minRTT time.Duration) bool {
	return minRTT > 0 && rtt > 0 && float64(rtt) <= crawlQueue*float64(minRTT)
}

// reinjectPrefix requests on path pin the rest of what the original
// stream still owes when pin would land it sooner (stripesched.Reinject):
// all of it, from where the original is now, which stops there. A cut set
// as far on as the original would get meanwhile at its path's estimated
// rate left the app waiting on the original for the bytes before it where
// that estimate was high: one lane of a lossy link crawls well below the
// lane's share of the link (TestStripeOriginalOffACrawlingPath: 1.34 s
// against 0.83, the fast path alone 0.84). Not while the original's bytes
// may wait unread after a pause of the process (backlogged): it would
// read as behind by all it delivered meanwhile; mu held.
func (s *Run) reinjectPrefix(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time) *piece {
	orig, ok := all[s.origPath]
	left := s.cutAt - s.origAt
	if s.prefix || pin == s.origPath || !ok || left < stripesched.MinPiece || s.backlogged(s.origPath, now) {
		return nil
	}
	crawl := lossLimited(orig.RTT, s.windows[s.origPath].minRTT)
	if d := now.Sub(s.began); d > orig.RTT && s.origAt > 0 {
		// What the original stream has done since its head: a better
		// estimate of its path than one not yet measured. Where the
		// stripe has measured the path, the lower of the two: an
		// average since the head keeps a path whose rate has since
		// fallen looking fast, and the app waits on the original as it
		// crawls (the fastest of three paths, dropped 8× at 0.5 s: 0.79
		// of the offered sum, 0.94 so; TestStripeFollowsRateChange).
		// Where the path was seen to fall with its queue empty
		// (lossLimited: its loss, not its link, holds it), lower
		// still, as trim judges it (rateEst.trimRate): a lossy near
		// path measured on its slow-start burst read 5–6 MB/s, extended
		// the original to 2.2 MB, then crawled at its loss's ~1 MB/s
		// while the estimate and the average lagged by hundreds of ms,
		// and the app waited on the original (TestStripeLossyNearOriginal:
		// 0.90–0.94 × the best path alone, 0.968 so). Not where no fall
		// was seen (rateEst.lately alone moved the rest of sweep seed
		// 3's loss-free mix 15 off a path that was not slow: 1.19 × the
		// best path alone, 0.93–0.95 so), nor where the queue filled as
		// it fell: a rate drop, whose rest moved whole too soon so
		// (TestStripeRidesRateDrop's first row, 0.89–0.90 of the offered
		// sum against 0.91–0.94).
		avg := float64(s.origAt) / d.Seconds()
		if e := s.est[s.origPath]; e != nil && e.rate > 0 {
			avg = min(avg, e.rate)
			if crawl {
				avg = e.trimRate(avg, now)
			}
		}
		orig.Rate = avg
	}
	judged := own // behind its queue, unless sent ahead of it (InOrder)
	if s.inOrder[pin] {
		judged = own.Ahead()
	}
	if !stripesched.Reinject(judged, left, float64(left)/orig.Rate) {
		return nil
	}
	off := s.origAt
	if off >= s.cutAt-stripesched.MinPiece/2 {
		return nil
	}
	end := s.cutAt
	s.prefix, s.crawled, s.cutAt = true, crawl, off
	s.rate(s.origPath).cut(now)
	if s.queued[s.origPath] > 0 {
		s.queued[s.origPath] = max(0, off-max(s.from, s.origGot))
	}
	s.host.Reinjected()
	ctx, cancel := context.WithCancel(s.ctx)
	p := &piece{off: off, end: end - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now, next: s.inOrder[pin], moved: crawl}
	s.pieces = append([]*piece{p}, s.pieces...)
	return s.start(pin, p, now, own.RTT)
}

// originalRest is what path pin, which Take gave nothing, requests of
// the original's remainder: all of it (reinjectPrefix, where prefix) or
// its far part (trim), or nil; mu held.
func (s *Run) originalRest(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time, prefix bool) *piece {
	if prefix {
		if p := s.reinjectPrefix(pin, own, all, now); p != nil {
			return p
		}
	}
	return s.trim(pin, own, all, now)
}

// trim requests on path pin, which has nothing better to do, the far
// part of what the original stream still owes where the original would
// otherwise end clearly later than the two would together
// (stripesched.Trim): the original's path, extended as its share, may
// have slowed since (its rate fell: rateEst.drop); the original stops
// sooner, at the part's first byte. The original's path is judged at
// its recent rate where that fell (rateEst.trimRate): its estimate lags
// by up to its span. Only once every byte is requested:
// before, the other paths have pieces to take, and a cut original
// sends a round trip of bytes past the cut for nothing and no longer
// extends (TestStripeFollowsRateChange's rising row read 0.88–0.94 of
// the offered sum in eight runs, 0.933–0.936 so). Every path but the
// original's is judged at its least round trip (stripesched.QueueFree):
// its smoothed one still counts the queue its own pieces built at its
// bottleneck, and an idle path has no samples to lower it (57 ms at its
// last request on a path of 15, its queue since drained), so a path that
// could take a third of the original's rest after a 2× drop took nothing
// (100/20 + 50/30 Mbit/s/ms, the first halving at 1 s: 0.938 of the
// offered sum, 0.954 so; trimfall29). A trim mutes the original's path's drop test
// (rateEst.cut) only where the original may already have sent bytes
// past the new cut, a round trip's at its estimate: cut far ahead, its
// bytes before the cut flow on as before, and muted, a fall that began
// just before the trim was seen a round trip and a window later, after
// the bytes the trim left it had been asked at its old rate (the same mix
// dropping 4×: 0.935–0.938 in 10 runs, 0.959 in 8 so); mu held.
func (s *Run) trim(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time) *piece {
	orig, ok := all[s.origPath]
	if pin == s.origPath || !ok || orig.Guess || !s.originalRuns() || s.next < s.end || s.backlogged(s.origPath, now) {
		return nil
	}
	if e := s.est[s.origPath]; e != nil {
		orig.Rate = e.trimRate(orig.Rate, now)
	}
	from := max(s.origGot, s.origAt)
	judged, others := s.queueFree(pin, own, all)
	moved := stripesched.Trim(orig, judged, others, s.cutAt-from)
	if moved <= 0 {
		return nil
	}
	off, end := s.cutAt-moved, s.cutAt
	s.cutAt = off
	if e := s.rate(s.origPath); float64(off-from) < e.rate*orig.RTT.Seconds() {
		e.cut(now) // the original's sender may have sent past off already
	}
	if s.queued[s.origPath] > 0 {
		s.queued[s.origPath] = max(0, off-max(s.from, s.origGot))
	}
	s.host.Reinjected()
	ctx, cancel := context.WithCancel(s.ctx)
	p := &piece{off: off, end: end - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now}
	s.pieces = append([]*piece{p}, s.pieces...)
	return s.start(pin, p, now, own.RTT)
}

// queueFree is own (path pin) and the stripe's paths in all but pin and
// the original's, as trim judges them: at their least round trips
// (stripesched.QueueFree); mu held.
func (s *Run) queueFree(pin int, own stripesched.Path, all map[int]stripesched.Path) (stripesched.Path, []stripesched.Path) {
	own.RTT = stripesched.QueueFree(own.RTT, s.windows[pin].minRTT)
	var others []stripesched.Path
	for id, v := range all {
		if id != pin && id != s.origPath {
			v.RTT = stripesched.QueueFree(v.RTT, s.windows[id].minRTT)
			others = append(others, v)
		}
	}
	return own, others
}

// unload requests again on path pin, which has nothing better to do once
// every byte is requested, the far piece of another path's that
// stripesched.Unload moves, from the path that would otherwise finish
// last. That path is judged at the lower of its estimate and what it
// delivered over the last half of its drop window, up to now
// (rateEst.lately): after a drop the estimate lags by up to its span,
// and rateEst.fell, which asks that the path still owe two round trips
// at its recent rate, is cleared just as its last pieces remain. On
// 100/20 + 50/30 Mbit/s/ms whose 50 dropped 5× at 1 s, fell was set
// only ~120 ms after the drop, and for ~20 ms; judged over the whole
// window, read at the last arrival, unload reached 0.91 of the offered
// sum, not 0.95, and a three-path mix whose second path stalled after
// its drop kept reading its rate from before the stall (0.84 in a third
// of its runs). Only a path that sends its pieces in the order asked
// (InOrder), whose far pieces have not begun: round-robin sends them all
// at once; and not while its bytes may wait unread after a pause of the
// process (backlogged); mu held.
func (s *Run) unload(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time) *piece {
	if s.next < s.end {
		return nil
	}
	var far *piece
	last := 0.0 // when far's path would land its last piece alone
	for id, v := range all {
		if id == pin || !s.inOrder[id] || s.backlogged(id, now) {
			continue
		}
		if e := s.est[id]; e != nil {
			if r, ok := e.lately(now, stripesched.DropWindow(e.rtt)/2); ok {
				v.Rate = min(v.Rate, r)
			}
		}
		mine, owed := s.owed(id)
		if k := stripesched.Unload(v, own, owed); k > 0 {
			if alone := stripesched.Landed(v, owed); alone > last {
				far, last = mine[len(mine)-1], alone
			}
		}
	}
	if far == nil {
		return nil
	}
	s.host.EndgameCopied(far.size())
	return s.start(pin, far, now, own.RTT)
}

// owed is the pieces path id still owes, their first copy on it and no
// other, in the order it sends them (sentBefore), and their sizes and
// bytes still to come; mu held.
func (s *Run) owed(id int) ([]*piece, []stripesched.Owed) {
	var mine []*piece
	for _, q := range s.pieces {
		if q.path == id && !q.landed && q.copies == 1 && q.running == 1 {
			mine = append(mine, q)
		}
	}
	slices.SortStableFunc(mine, func(a, b *piece) int {
		switch {
		case sentBefore(a, b):
			return -1
		case sentBefore(b, a):
			return 1
		}
		return 0
	})
	owed := make([]stripesched.Owed, len(mine))
	for i, q := range mine {
		owed[i] = stripesched.Owed{Size: q.size(), Left: q.size() - q.rx}
	}
	return mine, owed
}

// holder is the piece path pin, seen as own, requests again, nil for
// none (stripesched.Reinject: own lands it ReinjectLead times and
// ReinjectMargin sooner than its first path is due to): the head piece;
// where the window alone stops own and own has the highest rate
// (blocked), the first piece in the window that would otherwise land
// ReinjectMargin after every piece before it (judged by their copies'
// estimates: lands), which holds the window once those are in. With the
// head alone, a lossy slower path's pieces in order were copied one at a
// time, a round trip each, and every path stood idle meanwhile: 6 MB took
// 0.77–0.96 × the time on the best path alone in 8 of 10 runs on fake
// time (TestStripeLossySlowPathNeverBelowBest), 1.02–1.16 so. Judged
// without ReinjectLead, a path whose rate had just dropped 8× was read
// below its new rate and its pieces were copied for nothing
// (TestStripeFollowsRateChange's first row: 0.89–0.92 of the offered sum,
// 0.90–0.93 with the head alone, 0.93 so); copying every piece own lands sooner
// sent the lanes of a 2 %-lossy path's pieces, which land side by side,
// twice (TestLanesLossyMixes: 0.68–0.70 of the sum, 0.84 with the head alone).
// The original's path never copies the original's rest moved off it
// (piece.moved): it was moved because that path crawls, and judged by
// its lagging estimate the path copied 2.1 MB of it back within a
// millisecond (fake time, 200/60 + 100/15 Mbit/s/ms with 1.5 % loss). Nor
// is a piece copied off a path that may have bytes of it waiting unread
// after a pause of the process (backlogged); mu held.
func (s *Run) holder(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time, blocked bool) *piece {
	var before float64 // when the pieces looked at so far land, in seconds from now
	for i, h := range s.pieces {
		if i > 0 && !blocked {
			return nil
		}
		if h.landed {
			continue
		}
		due := s.due(h, all, now)
		land := s.lands(h, due, now)
		if h.copies == 1 && h.path != pin && !(h.moved && pin == s.origPath) && !s.backlogged(h.path, now) && due > before+stripesched.ReinjectMargin.Seconds() && stripesched.Reinject(own, h.size(), due) {
			h.again = now.Add(seconds(own.Done(h.size())))
			return h
		}
		before = max(before, land)
	}
	return nil
}

// backlogged: path id's rate estimator says its bytes may wait in its
// socket (rateEst.backlogged), so what it owes reads more than it does
// and it is no path to copy from yet; mu held.
func (s *Run) backlogged(id int, now time.Time) bool {
	e := s.est[id]
	return e != nil && e.backlogged(now)
}

// lands is when piece h, its first copy due in due seconds, lands by its
// copies' estimates, in seconds from now: the sooner of due and its
// second copy's (holder); mu held.
func (s *Run) lands(h *piece, due float64, now time.Time) float64 {
	if h.copies > 1 && !h.again.IsZero() {
		return min(due, max(h.again.Sub(now).Seconds(), 0))
	}
	return due
}

// due is when the head piece h should land, in seconds from now, by what
// is known of its path now (the estimate that placed it may have been
// wrong). While its path delivers, the piece waits for the pieces its
// path sends before it (InOrder: sentBefore, stripesched.DueInOrder) or
// shares the path with every piece in flight there (round-robin:
// stripesched.DueRoundRobin); a path that has delivered nothing of the
// stripe for longer than stripesched.Stalled allows may have stalled, and
// the piece is assumed to take as long again as it has taken so far; mu
// held.
func (s *Run) due(h *piece, all map[int]stripesched.Path, now time.Time) float64 {
	elapsed := now.Sub(h.start).Seconds()
	v, ok := all[h.path]
	if !ok {
		return elapsed // its path is gone: as late as it gets
	}
	heard := h.start
	if e := s.est[h.path]; e != nil && e.heard.After(heard) {
		heard = e.heard
	}
	// The time the process did not run is no silence of the path's, nor
	// time the piece took (pauses).
	if stripesched.Stalled(v, now.Sub(heard)-s.pauses.within(heard, now)) {
		return elapsed - s.pauses.within(h.start, now).Seconds()
	}
	var first float64 // until its first byte, if none came yet
	if h.rx == 0 {
		first = max(v.RTT.Seconds()-elapsed, 0)
	}
	var rems []int64
	for _, q := range s.pieces {
		if q.path == h.path && !q.landed && q.running > 0 && (!s.inOrder[h.path] || q != h && sentBefore(q, h)) {
			rems = append(rems, q.size()-q.rx)
		}
	}
	if s.inOrder[h.path] {
		return first + stripesched.DueInOrder(v, h.size()-h.rx, rems)
	}
	return first + stripesched.DueRoundRobin(v, h.size()-h.rx, rems)
}

// sentBefore: ct-server sends piece q's first copy before p's, both on
// one path (wire.HdrPiece): q is of bytes the app waits on and p not, or
// both are alike and q was asked for first; mu held.
func sentBefore(q, p *piece) bool {
	if q.next != p.next {
		return q.next
	}
	return q.start.Before(p.start)
}

// seconds is s seconds as a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// start counts a request for p on path pin, whose round trip is rtt;
// mu held.
func (s *Run) start(pin int, p *piece, now time.Time, rtt time.Duration) *piece {
	p.copies++
	p.running++
	s.running++
	s.ask(pin, p.size(), now, rtt)
	return p
}

// ask counts size bytes requested on path pin; mu held.
func (s *Run) ask(pin int, size int64, now time.Time, rtt time.Duration) {
	e := s.rate(pin)
	if s.queued[pin] == 0 {
		e.idle(now)
	}
	s.queued[pin] += size
	e.peak, e.rtt, e.minRTT, e.asked = max(e.peak, s.queued[pin]), rtt, s.windows[pin].minRTT, e.asked+size
	if m := s.meter(pin); m != nil {
		m.asked(size, now, rtt, s.windows[pin].minRTT)
	}
}

// originalRuns: the original stream still delivers (it has not reached
// cutAt); a stripe that starts at 0 has none; mu held.
func (s *Run) originalRuns() bool { return s.from > 0 && !s.origStopped }

// extending: the original stream still runs and ends where the next
// bytes in order begin, so its path may extend it; mu held.
func (s *Run) extending() bool {
	return s.originalRuns() && !s.prefix && s.next == s.cutAt
}

// credit counts the original's bytes up to got: those past from (its
// extension) come off its path's queue, and all count toward the path's
// rate while the stripe keeps it busy (the extension's bytes arrive
// behind the original's first part: counted alone they read the path
// far below its rate); mu held.
func (s *Run) credit(got int64) {
	d := got - s.origGot
	ext := min(got-max(s.origGot, s.from), s.queued[s.origPath])
	s.origGot = max(s.origGot, got)
	if d <= 0 {
		return
	}
	now := time.Now()
	e := s.rate(s.origPath)
	s.queued[s.origPath] -= max(ext, 0)
	fell := e.fell
	e.got(d, now, s.queued[s.origPath])
	if fell == 0 && e.fell > 0 && s.next >= s.end {
		// Seen to fall near the end: an idle path may trim the original
		// now (trim), not at its next poll (worthPoll), by which time
		// the rest was under what a trim moves (100/20 + 50/30
		// Mbit/s/ms, the first halving at 1 s: 0.937 of the offered sum
		// in 3 runs of 4 without the wake, 0.954 in 4 of 4 with it).
		s.wake()
	}
	if m := s.meter(s.origPath); m != nil && ext > 0 {
		m.got(ext, now) // the extension was asked on the link too (ask)
	}
	if ext > 0 && s.queued[s.origPath] <= 0 {
		e.landed(now)
	}
	if ext > 0 && s.queued[s.origPath] <= s.extMark {
		// Half the extension is in: its path may extend the original
		// again well before it reaches the cut, and is asked again at
		// each halving after. Not on every chunk: each wake has every
		// worker decide again, hundreds of times a second.
		s.extMark = s.queued[s.origPath] / 2
		s.wake()
	}
}

// TakeOver: the original stream failed after giving the app n bytes,
// short of where it was to stop (its path died). The stripe fetches the
// original's rest, [n, cutAt), itself as its first piece, on the swiftest
// usable path (a piece moves like any request if that path fails too),
// and goes on; false when it has stopped. The original runs on as its
// path's share (take), so a path that dies mostly dies under the original:
// abandoned there, the stripe left the rest of a 42 MB download to one
// 10 Mbit/s stream, never back on the 40 Mbit/s path after its 3 s cut.
func (s *Run) TakeOver(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	now := time.Now()
	s.origStopped, s.origAt = true, n
	s.delivered = max(s.delivered, n)
	if owed := min(s.cutAt-max(s.origGot, s.from), s.queued[s.origPath]); owed > 0 {
		s.unask(s.origPath, owed, now)
	}
	if n < s.cutAt {
		pin, rtt := s.swiftestPin(now)
		ctx, cancel := context.WithCancel(s.ctx)
		p := &piece{off: n, end: s.cutAt - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now, next: s.inOrder[pin]}
		s.pieces = append([]*piece{p}, s.pieces...)
		s.start(pin, p, now, rtt)
		s.wg.Go(func() { s.fetch(pin, p) }) // workers still run (Abandon comes later), so the group is not empty
	}
	s.wake()
	return true
}

// swiftestPin is the usable path of the highest rate other than the
// original's, where a taken-over original goes, and its round trip; the
// original's path when no other is usable now (its piece then waits for
// a path as any request does); mu held.
func (s *Run) swiftestPin(now time.Time) (int, time.Duration) {
	_, _, all, _ := s.views(-1, now)
	best, rate, rtt := s.origPath, -1.0, time.Duration(0)
	for id, v := range all {
		if id != s.origPath && v.Rate > rate {
			best, rate, rtt = id, v.Rate, v.RTT
		}
	}
	return best, rtt
}

// unask takes n bytes that will not come off path pin's queue at now.
func (s *Run) unask(pin int, n int64, now time.Time) {
	s.queued[pin] -= n
	if s.queued[pin] <= 0 {
		s.rate(pin).landed(now)
	}
	if m := s.meter(pin); m != nil {
		m.gone(n, now)
	}
}

// closedChan is a wait that ends at once: a worker that extended the
// original decides again.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// fetch requests p on path pin and records what came back. For an
// ordered piece (piece.ordered) the request is a place in its path's
// order: it fetches the piece first in line when its stream opens
// (claim), p or another taken with it.
func (s *Run) fetch(pin int, p *piece) {
	r := &request{s: s, pin: pin}
	ctx := p.ctx
	if p.ordered && pin == p.path {
		ctx, r.cancel = context.WithCancel(s.ctx)
		defer r.cancel()
	} else {
		r.p = p
	}
	data, err := s.host.Fetch(ctx, pin, Request{Next: p.next, Open: r.open, Received: r.received})
	if r.stop != nil {
		r.stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.p == nil { // it failed before it had a stream: in place of the first in line
		r.p = s.order(pin).pop()
	}
	p, got := r.p, r.got
	p.running--
	s.running--
	s.queued[pin] -= p.size() - got
	if got < p.size() {
		s.rate(pin).cut(time.Now())
	}
	if s.queued[pin] <= 0 {
		s.rate(pin).landed(time.Now())
	}
	if m := s.meter(pin); m != nil {
		m.gone(p.size()-got, time.Now())
	}
	switch {
	case p.landed:
	case err == nil:
		p.data, p.landed = data, true
		close(p.done)
		p.cancel() // a second copy still running is not needed
	case p.running == 0:
		p.err, p.landed = err, true
		close(p.done)
		p.cancel()
	}
	s.wake()
}

// request is one Fetch: its piece (for an ordered one, nil until its
// stream opens) and the bytes of it received so far (guarded by Run.mu).
type request struct {
	s      *Run
	pin    int
	p      *piece
	got    int64
	cancel context.CancelFunc // ends an ordered piece's request: its piece is no longer needed (stop)
	stop   func() bool
}

// open is Request.Open: an ordered piece's request takes its path's turn,
// opens its stream and claims the first piece in line (its request is
// then cancelled with that piece); any other just opens its stream.
func (r *request) open(open func() error) (off, end int64, err error) {
	s := r.s
	s.mu.Lock()
	p, o := r.p, s.order(r.pin)
	s.mu.Unlock()
	if p != nil { // not ordered, or a later attempt of one
		return p.off, p.end, open()
	}
	select {
	case o.turn <- struct{}{}:
	case <-s.ctx.Done():
		return 0, 0, s.ctx.Err()
	}
	defer func() { <-o.turn }()
	if err := open(); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	p = o.pop()
	r.p = p
	s.mu.Unlock()
	r.stop = context.AfterFunc(p.ctx, r.cancel)
	return p.off, p.end, nil
}

// received is Request.Received: n bytes of the response came, counted
// off the path's queue as they come.
func (r *request) received(n int) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.p
	k := min(int64(n), p.size()-r.got)
	r.got += k
	if r.pin == p.path { // its first copy: a second is always on another path
		p.rx += k
	}
	s.queued[r.pin] -= k
	s.rate(r.pin).got(k, time.Now(), s.queued[r.pin])
	if m := s.meter(r.pin); m != nil {
		m.got(k, time.Now())
	}
}

// order is path pin's order (orders); mu held.
func (s *Run) order(pin int) *order {
	o := s.orders[pin]
	if o == nil {
		o = &order{turn: make(chan struct{}, 1)}
		s.orders[pin] = o
	}
	return o
}

// pop takes the first piece in line: each ordered request put its piece
// in line before it began and takes one out once, so there is one; mu
// held.
func (o *order) pop() *piece {
	p := o.waiting[0]
	o.waiting = o.waiting[1:]
	return p
}

// views is what the policy knows of the paths that have workers in this
// stripe and are usable now (usable), in all, and split into path pin's
// own and the others; ok is false when pin is not among them; mu held. A
// path's rate is what this stripe measured on it, else the client's
// estimate, else what its congestion window allows per round trip; its
// Peak is the client's estimate, which requests before the stripe and
// beside it keep current while the stripe's own still counts its start.
func (s *Run) views(pin int, now time.Time) (own stripesched.Path, others []stripesched.Path, all map[int]stripesched.Path, ok bool) {
	all = map[int]stripesched.Path{}
	var origOwes int64
	for id, st := range s.usable(now) {
		rate, ramping, last := st.Rate, false, 0.0
		if e := s.est[id]; e != nil && e.rate > 0 {
			rate, ramping, last = e.rate, e.ramping(st.RTT), e.last
		}
		guess := rate <= 0
		if guess && st.RTT > 0 {
			rate = float64(st.Cwnd) / st.RTT.Seconds()
		}
		if rate <= 0 {
			rate = pathchoice.DefaultRate
		}
		all[id] = stripesched.Path{RTT: st.RTT, Rate: rate, Queued: max(st.Outstanding, s.queued[id]), Guess: guess, Peak: st.Rate, Ramping: ramping, Last: last, Least: st.MinRTT}
		if id == s.origPath {
			origOwes = st.Outstanding
		}
		s.links[id] = st.Link
		s.windows[id] = streamWindow{st.StreamWindow, st.MinRTT, st.FirstWindow}
		s.inOrder[id] = st.InOrder
	}
	s.origQueue(all, origOwes)
	s.shareLinks(all)
	for id, v := range all {
		if id == pin {
			own, ok = v, true
		} else {
			others = append(others, v)
		}
	}
	return own, others, all, ok
}

// origQueue sets the queue of the original's path in all while the
// original runs and that path has the highest rate, so that it extends
// the original (take): the original's part still owed and the extension,
// not the whole object the client counts for it (outstanding). A slower
// path keeps the client's count and takes no piece until the original
// stops: pieces beside the original on its own path slow the bytes the
// app needs first (on sockets the lossy row's original, on its 40 Mbit/s
// lossy path beside a piece from the far end and one in order, took
// 729 ms for its 256 KiB, 0.86 × the best path alone); mu held.
func (s *Run) origQueue(all map[int]stripesched.Path, outstanding int64) {
	v, ok := all[s.origPath]
	if !ok || !s.originalRuns() {
		return
	}
	for id, o := range all {
		if id != s.origPath && o.Rate > v.Rate {
			return
		}
	}
	v.Queued = max(outstanding-(s.total-s.origGot), s.queued[s.origPath]) + max(s.from-s.origGot, 0)
	all[s.origPath] = v
}

// shareLinks scales down the rates of paths that share a link (the lanes
// of one interface: PathState.Link) so that together they claim no more
// than the link was measured to deliver to all of them (linkMeter); mu
// held. Each lane's own estimate is measured while its siblings may have
// been idle, so the estimates summed past what the link carries: on the
// matrix's lossy row on fake time, three lanes of the 40 Mbit/s path read
// 1.8, 2.0 and 1.4 MB/s (5.1 of a 5 MB/s link that delivered them 3.6),
// their pieces, planned at those rates, landed hundreds of ms late, and
// the window stood full behind them while the fast path waited. With the
// rates shared: median 102.9 Mbit/s (worst 94.9) of 40 runs, against
// 102.0 (92.5) without — within the runs' spread, but no estimate of a
// lane then plans more than its link delivers.
//
// Until the stripe has measured the link, the lanes together claim no
// more than the best of them: the link carries at least what one lane
// drew from it alone, and whether the others were measured beside it or
// alone no estimate says. Left to their own estimates, a stripe's lanes
// were planned at the sum from their first pieces on, which their workers
// all take at once: on sockets (lowmode36, 120 Mbit/s 200 ms + 10 Mbit/s
// 50 ms with 1 % loss, at load 4.5–7.6) the lossy link's lanes summed to
// 1.4–2.8 × its rate in 7 of 8 draws below the far path alone, 1.2–1.3 ×
// in those above it, and their pieces held the app; on fake time
// (TestStripeStaleLanesBesideFarPath) 1.10–1.14 × the far path alone,
// 0.94–1.03 × so. A link so underrated still keeps each lane's pipeline
// of pieces (stripesched.Take's rule 1), which measures the link within
// its first round trips.
func (s *Run) shareLinks(all map[int]stripesched.Path) {
	sum, most, n := map[string]float64{}, map[string]float64{}, map[string]int{}
	for id, v := range all {
		if l := s.links[id]; l != "" {
			sum[l] += v.Rate
			most[l] = max(most[l], v.Rate)
			n[l]++
		}
	}
	for id, v := range all {
		l := s.links[id]
		if n[l] < 2 {
			continue
		}
		link := most[l] // not measured in this stripe yet: no more than its best lane
		if m := s.link[l]; m != nil && m.est.rate > 0 {
			link = m.est.rate
		}
		if sum[l] <= link {
			continue
		}
		f := link / sum[l]
		v.Rate, v.Peak = v.Rate*f, v.Peak*f
		all[id] = v
	}
}

// linkMeter measures what a shared link delivers to all its paths in a
// stripe, as rateEst does one path's: busy while any of them has bytes
// of the stripe in flight.
type linkMeter struct {
	est    rateEst
	queued int64
}

// meter is the linkMeter of path pin's link, or nil for a path with a
// link of its own; mu held.
func (s *Run) meter(pin int) *linkMeter {
	l := s.links[pin]
	if l == "" {
		return nil
	}
	m := s.link[l]
	if m == nil {
		m = &linkMeter{}
		s.link[l] = m
	}
	return m
}

// asked counts n bytes requested at now on a path of the link, whose
// round trip is rtt and least round trip minRTT.
func (m *linkMeter) asked(n int64, now time.Time, rtt, minRTT time.Duration) {
	if m.queued <= 0 {
		m.est.idle(now)
	}
	m.queued += n
	m.est.peak, m.est.rtt, m.est.minRTT = max(m.est.peak, m.queued), rtt, minRTT
}

// got counts n bytes received at now.
func (m *linkMeter) got(n int64, now time.Time) {
	m.queued -= n
	m.est.got(n, now, m.queued)
}

// gone takes n bytes that will not come (a copy ended short) off the
// queue at now.
func (m *linkMeter) gone(n int64, now time.Time) {
	m.queued -= n
	if m.queued <= 0 {
		m.est.landed(now)
	}
}

// usable is the state of the stripe's paths that may take pieces now:
// those up and not held (PathState.HeldUntil), or, when every path up is
// held, those up — a held path is still better than none; mu held.
func (s *Run) usable(now time.Time) map[int]PathState {
	up, free := map[int]PathState{}, map[int]PathState{}
	for id := range s.host.Paths() {
		if s.staffed[id] == 0 {
			continue
		}
		st, ok := s.host.Path(id)
		if !ok {
			continue
		}
		up[id] = st
		if !now.Before(st.HeldUntil) {
			free[id] = st
		}
	}
	if len(free) > 0 {
		return free
	}
	return up
}

// rate is path id's estimator in this stripe; mu held.
func (s *Run) rate(id int) *rateEst {
	e := s.est[id]
	if e == nil {
		e = &rateEst{clock: s.pauses}
		s.est[id] = e
	}
	return e
}

// rateEst measures a path's delivery rate while the stripe keeps it
// busy: bytes received over the time since its queue last became
// non-empty. Bytes count as they arrive, not as pieces land: a path's
// pieces share it (its streams interleave) and land together at the end,
// so a rate from landed pieces read a 150 Mbit/s path at 4.8 MB/s (its
// first 3.5 MB piece of four, after all four had moved for 0.7 s) and at
// 35 MB/s (the other three a moment later). The period is halved (bytes
// and time) once longer than span, so the estimate follows a path
// whose rate changes within about that long. Its recent window, read
// well below the estimate, is kept apart (drop: fell) for the end's
// trim only.
type rateEst struct {
	from  time.Time     // start of the busy period (zero: idle)
	bytes int64         // received since from
	peak  int64         // the most bytes requested and not yet received in the period
	rtt   time.Duration // the path's smoothed round trip at its last request
	rate  float64       // bytes/s; 0 until measured
	hold  time.Time     // no sample before then (the original's first round trip: got)
	quiet time.Time     // when the path last had nothing of the stripe in flight
	heard time.Time     // when bytes of the stripe last arrived on the path
	// ramp is the path's start-up (stripesched.Ramp), advanced once per
	// round trip in which bytes arrived; round is when the last began.
	// asked counts the bytes ever requested on the path, and marks what
	// it was when each of the last two rounds began.
	ramp  stripesched.Ramp
	round time.Time
	asked int64
	marks [2]int64
	// recv counts the bytes ever received on the path, at what it was
	// when the current round began; last is the rate of the last whole
	// round (stripesched.Path.Last).
	recv, at int64
	last     float64
	// least is the least round trip the path had at a round's end
	// (stripesched.Queuing ends the ramp once it rises).
	least time.Duration
	// minRTT is the least round trip of the path's connection at its last
	// request (PathState.MinRTT; 0: not known), which drop measures the
	// path's queue in: least is taken at the stripe's round ends, when its
	// pipeline already queues at the bottleneck (35 ms on a path of 10).
	minRTT time.Duration
	// trail is the period's bytes received by each arrival in the last
	// stripesched.DropWindow and the one before (recent); sum counts them.
	trail []arrival
	sum   int64
	// mute: no drop test on a window that begins before then (cut).
	mute time.Time
	// fell: the path's recent rate where it fell well below rate (drop),
	// else 0.
	fell float64
	// clock: when the process did not run (pauses), which its readings
	// leave out; nil: never. skip is the period's time left out, backlog
	// when the bytes of the latest pause are in: those before then are
	// left out of bytes, not of the trail (got).
	clock   *pauses
	skip    time.Duration
	backlog time.Time
}

// arrival is when bytes arrived, the period's bytes received by then,
// and the estimate before they came where it already spanned a drop
// window (0 before: the period's first bursts read a path at several
// times its rate), which drop judges a window from that arrival on by.
type arrival struct {
	at   time.Time
	sum  int64
	rate float64
}

// appLimitedQueues: a busy period whose queue never held this many round
// trips at the rate it measured was limited by what the stripe asked of
// the path, not by the path (the delivery-rate estimator's app-limited
// sample: Cheng et al., draft-cheng-iccrg-delivery-rate-estimation). Such
// a sample only raises the estimate. Two round trips: a queue of one is
// delivered in about a round trip whatever the path's rate.
const appLimitedQueues = 2

// The memory of rateEst (span): the longer of rateSpan and spanRounds of
// the path's round trips. Long enough to hold several pieces and round
// trips of bytes, which arrive in bursts; short enough that a path whose
// rate changes is planned at its new rate within a few hundred ms. With a
// second for every path, a 40 Mbit/s path that fell to 10 read 9.3, 8.1,
// 6.7 and 5.0 MB/s 40, 160, 390 and 740 ms after (true: 2.5), so it stayed
// the "swiftest" path, its pieces were never cut, and the head pieces it
// held were not copied to the other path, whose estimate said it would
// land them no sooner: 80/20 + 40/30 Mbit/s/ms whose first path drops
// 4× at 1 s reached 0.81 of the offered sum on fake time, 0.90–0.92 so
// (TestStripeFollowsRateChange's first two rows: 0.67 and 0.88, 0.93 and
// 0.92 so).
const (
	// rateSpan: a quarter second holds three pieces (PieceSpan) of a
	// path's own and ten round trips of a 25 ms path.
	rateSpan = 250 * time.Millisecond
	// spanRounds: a long round trip needs more time for as many bursts;
	// with rateSpan alone, a 15 Mbit/s path 130 ms away beside a
	// 150 Mbit/s one, the mix fell from 0.95 to 0.92 of the sum (fake
	// time, 20 MB). The smoothed RTT grows as a slowed path's queue
	// fills (to about 90 ms on a 20 ms path whose rate fell 4×), so the
	// span then lengthens somewhat; at 8 rounds that undid the gain
	// (0.81).
	spanRounds = 4
)

// span is the estimator's memory on a path of round trip rtt.
func span(rtt time.Duration) time.Duration { return max(rateSpan, spanRounds*rtt) }

// idle marks the start of a busy period at now: the path had nothing of
// the stripe in flight.
func (e *rateEst) idle(now time.Time) {
	e.from, e.bytes, e.peak, e.trail, e.sum, e.fell, e.skip = now, 0, 0, e.trail[:0], 0, 0, 0
}

// got counts n bytes received at now. The period's first round trip is
// counted although no bytes came back in it: leaving out the smoothed
// RTT, which includes queueing, made estimates of a loaded path up to
// several times too high, and a slow path that looks fast takes pieces
// that hold the window. The original's period opens when its headers
// arrive (Start), and bytes that had queued in its stream meanwhile come
// in a burst, so its first round trip from then gives no sample (hold).
// On sockets at load 9, 52 kB within 0.2 ms read the 2 : 1 row's 10 MB/s
// path at 297 MB/s, and the original, extended by pieces sized at that
// rate, took the whole 20 MB object in 0.1 ms: the other path carried
// nothing (0.62 of the sum). A piece's period opens at its request: its
// bytes come a round trip later anyway (held the same way, the three
// 30 Mbit/s paths of TestStripeReachesSum reached 0.918–0.934 of the sum
// on fake time, against 0.943–0.945). A sample the stripe limited
// (appLimitedQueues) only raises the estimate: counted as it was, a
// 15 Mbit/s path 125 ms away asked for two 32 KiB pieces at a time
// measured 0.2–0.6 MB/s of its 1.9, and the policy, trusting that, kept
// asking for two. A period leaves out a pause of the process (pauses)
// and its backlog: the time from the pause's start until the backlog is
// in (settled), and the bytes that came in it (skip). Counted, they read
// the path by what it sent while nobody asked it for more: after a
// 300 ms pause a 10 MB/s path read 4.7 MB/s, and a 2.5 MB/s one 1.5, and
// its head piece was copied (TestPauseOriginalNotMoved).
func (e *rateEst) got(n int64, now time.Time, queued int64) {
	e.skipPause(now)
	e.heard, e.recv = now, e.recv+n
	if e.from.IsZero() {
		return
	}
	e.sum += n
	settled := 0.0
	if now.Sub(e.from)-e.skip >= stripesched.DropWindow(e.rtt) {
		settled = e.rate
	}
	e.trail = append(e.trail, arrival{now, e.sum, settled})
	if now.Before(e.backlog) {
		return
	}
	e.bytes += n
	d := now.Sub(e.from) - e.skip
	if d <= 0 || now.Before(e.hold) || e.bytes < stripesched.MinPiece {
		return
	}
	sample := float64(e.bytes) / d.Seconds()
	if float64(e.peak) >= appLimitedQueues*sample*e.rtt.Seconds() || sample > e.rate {
		e.rate = sample
	}
	if d > span(e.rtt) { // the time left out, as if spread evenly over the period
		e.from, e.bytes, e.skip = now.Add(-(d+e.skip)/2), e.bytes/2, e.skip/2
	}
	e.drop(now, queued)
	if now.Sub(e.round) >= e.rtt {
		e.endRound(now, queued)
	}
	e.queueEnds()
}

// queueEnds ends the start-up (Ramp) for good once the path's round trip at
// its last request has risen over its least (stripesched.Queuing): it is
// at its rate, and the start-up only fills its bottleneck's queue. The one
// place the end is latched, on each sample (got); views only read it
// (ramping). A start-up that resumed once the loss had drained the queue
// overfilled it again, round trip after round trip: 101 Mbit/s / 166 ms
// beside two slower paths, its delivery per 100 ms dipped 6 times in
// 1.2 s after its start-up, and not once with the end held (fake time).
func (e *rateEst) queueEnds() {
	if stripesched.Queuing(e.rtt, e.least) {
		e.ramp.Full = true
	}
}

// drop sets fell to the path's recent rate where its recent window,
// MinPiece or more of its bytes, reads well below the estimate
// (stripesched.Dropped), and clears it otherwise. Only trim reads it:
// used as the path's estimate (restarting rateEst from the window), it
// took the two 80/10 + 40/30 + 20/60 rows of TestStripeRidesRateDrop
// to 0.945–0.96, but a far 2 : 1 mix whose fast path drops 4× at 0.6 s
// then read 0.89 of the offered sum in one run of five to ten (windows
// read a 3.1 MB/s path at 1.1–1.5, and its pieces were copied to the
// other path: 1.1 MB twice), 0.94–0.95 on main and so.
// The window is judged against the higher of the estimate now and the
// estimate as it stood when the window began (arrival.rate): the
// estimate now holds the window's own bytes, and after its period was
// halved (got) little more where the round trip is long (the window two
// round trips, the span four). The matrix's halving row on sockets, its
// first path's round trip 60–70 ms behind a full queue, read at 8–9
// MB/s of its new 6.25 from 150 ms after the halving on: recent over
// that, 0.70–0.73, was no fall, fell stayed 0 while the other path, with
// nothing left to take, asked trim again and again, and trim, judging
// the original at its estimate, moved nothing for 70–160 ms (session
// 31's traces: 0.84–0.88 of the offered sum in those runs, 0.92–0.94
// where the fall was seen; TestRateEstDropLongRoundTrip).
func (e *rateEst) drop(now time.Time, queued int64) {
	w := stripesched.DropWindow(e.rtt)
	from := e.clock.back(now, w) // w of the time the process ran (pauses)
	i := 0
	for i+1 < len(e.trail) && !e.trail[i+1].at.After(from) {
		i++
	}
	e.trail = e.trail[i:]
	first := e.trail[0]
	if first.at.After(from) || first.at.Before(e.mute) { // the period's first bytes came less than a window ago, or a cut's
		return
	}
	got := e.sum - first.sum
	if got < stripesched.MinPiece { // a few packets are no rate (got)
		return
	}
	recent := float64(got) / (now.Sub(first.at) - e.clock.within(first.at, now)).Seconds()
	e.fell = 0
	if stripesched.Dropped(max(e.rate, first.rate), recent, queued, e.rtt, e.minRTT) {
		e.fell = recent
	}
}

// lately is what the path delivered over the last d before now, in
// bytes/s, from its trail (drop: it holds the last DropWindow, so d is
// to be within that); ok is false while the busy period is younger than
// d and a round trip (its first round trip brings nothing). Read at now,
// not at the last arrival: a path that stalls reads lower the longer it
// stays silent. d is of the time the process ran (pauses): a pause
// holds back what the path delivered meanwhile, so it is no silence of
// the path's.
func (e *rateEst) lately(now time.Time, d time.Duration) (rate float64, ok bool) {
	from := e.clock.back(now, d)
	if e.from.IsZero() || from.Sub(e.from) < e.rtt {
		return 0, false
	}
	var before int64 // the period's bytes received by from
	for i := len(e.trail) - 1; i >= 0; i-- {
		if !e.trail[i].at.After(from) {
			before = e.trail[i].sum
			break
		}
	}
	return float64(e.sum-before) / d.Seconds(), true
}

// trimRate is the rate trim judges the original's path at, its estimate
// rate: where the path was seen to fall (fell), the lowest of rate, fell
// and what it delivered over the last half of its drop window up to now
// (lately, as unload reads a path). fell is updated only by windows that
// begin after a cut's round trip (cut), and each trim cuts the original:
// trims a round trip or two apart froze it at a window that still held
// bytes from before the drop. The first of 80/10 + 40/30 + 20/60
// Mbit/s/ms, dropped 4× at 1 s, was judged at 4.2–4.6 MB/s to its end
// while it delivered 2.4, so each trim moved ~100 kB where 2/3 of the
// rest was the other path's share, and that path idled ~190 ms before the
// end (fake time, TestStripeRidesRateDrop's first row: 0.887–0.895 of
// the offered sum in 3 of 60 runs, 0.905 or more in 60 so). Not where no
// fall was seen: a path whose rate holds is judged at its estimate.
func (e *rateEst) trimRate(rate float64, now time.Time) float64 {
	if e.fell <= 0 {
		return rate
	}
	rate = min(rate, e.fell)
	if r, ok := e.lately(now, stripesched.DropWindow(e.rtt)/2); ok {
		rate = min(rate, r)
	}
	return rate
}

// cut: at now a request on the path ended short (its other copy won, or
// the original was cut), and the bytes its sender had already sent
// still arrive for about a round trip, uncounted, while the path's
// queued pieces wait: a window over them reads the path low. A
// 100 Mbit/s path dropped 4× read 1.5 MB/s of its 3.1 after the
// original's rest was moved off it (drop), and its pieces went to the
// other path twice: 100/20 + 50/60 Mbit/s/ms at 0.89 of the offered sum
// in one run of ten, 0.95 otherwise. No drop test on a window that
// begins before a round trip from now has passed.
func (e *rateEst) cut(now time.Time) {
	if m := now.Add(e.rtt); m.After(e.mute) {
		e.mute = m
	}
}

// endRound advances the ramp at now, the path's queue queued: it is
// behind when bytes asked before the round before this one began are
// still owed (asked − queued is what it has delivered or no longer owes),
// limited when none asked before this round began are (not the first
// round: no round had begun); its rate is the larger of the estimate and
// the round's delivery (last). least, the least round trip at a round's
// end, is what the queue test (queueEnds) measures a rise from.
func (e *rateEst) endRound(now time.Time, queued int64) {
	done := e.asked - queued
	behind, limited := e.marks[0] > done, !e.round.IsZero() && e.marks[1] <= done
	if !e.round.IsZero() {
		e.last = float64(e.recv-e.at) / now.Sub(e.round).Seconds()
	}
	e.at = e.recv
	e.ramp, e.round = e.ramp.Round(max(e.rate, e.last), behind, limited), now
	if e.rtt > 0 && (e.least == 0 || e.rtt < e.least) {
		e.least = e.rtt
	}
	e.marks = [2]int64{e.marks[1], e.asked}
}

// ramping: the path is still in its start-up (Ramp) and its round trip
// rtt now has not risen over its least (stripesched.Queuing). A pure
// view: the end is latched on samples (queueEnds), so a worker that looks
// between them sees the rise at once, and the estimator changes only as
// bytes arrive.
func (e *rateEst) ramping(rtt time.Duration) bool {
	return !e.ramp.Full && !stripesched.Queuing(rtt, e.least)
}

// backlogged: the process has not run again yet by its clock (a pause
// under way), or ran again too lately for the bytes the path delivered
// meanwhile to be in (settled): they may still wait in its socket,
// unread, and count as owed. Judged so, a 2.5 MB/s path owing its 300
// ms backlog had its far piece copied to a 10 MB/s path the moment the
// process ran again (TestPauseNoEndgameCopy). Not a path that had
// already stalled (stripesched.Stalled) when the pause began, since its
// last bytes or its busy period's start: it has no backlog to wait for.
// Without that, where the process paused 20 ms in every 30, a path that
// stalled was never copied.
func (e *rateEst) backlogged(now time.Time) bool {
	from, in, ok := e.settled(time.Time{}, now)
	return ok && now.Before(in) && !stripesched.Stalled(stripesched.Path{RTT: e.rtt}, from.Sub(later(e.heard, e.from)))
}

// settled is the latest pause of the process (pauses) that ended after
// since, from its start, and when the bytes the path delivered during it
// are in: a round trip after it ended, or as long as it lasted if that
// is shorter. The backlog is read as soon as the process runs; the round
// trip covers the readers' turn after it on a loaded machine, and a
// short pause leaves a short backlog. Bounded so: where pauses come one
// after another, a path that truly stalled is still judged between them.
func (e *rateEst) settled(since, now time.Time) (from, in time.Time, ok bool) {
	g, ok := e.clock.latest(since, now)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	return g.from, g.to.Add(min(e.rtt, g.to.Sub(g.from))), true
}

// skipPause, at the path's first bytes after a pause of the process
// (settled), leaves the pause and its backlog out of the busy period
// (got): their time now, their bytes as they come.
func (e *rateEst) skipPause(now time.Time) {
	from, in, ok := e.settled(later(e.heard, e.from), now)
	if !ok {
		return
	}
	if start := later(later(from, e.from), e.backlog); !e.from.IsZero() && in.After(start) {
		e.skip += in.Sub(start) // not twice: a pause under way is seen again on each arrival
	}
	e.backlog = later(e.backlog, in)
}

// landed ends the busy period: the path has nothing of the stripe left
// in flight, so the next request starts a new one.
func (e *rateEst) landed(now time.Time) { e.from, e.quiet = time.Time{}, now }
