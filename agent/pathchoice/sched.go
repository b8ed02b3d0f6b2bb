package pathchoice

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// PathView is what a Scheduler sees of one usable path when it picks.
type PathView struct {
	ID   int           // index of the path in the client's configuration
	SRTT time.Duration // smoothed RTT of the path's QUIC connection
	// Outstanding is the response bytes still expected on the path (known
	// Content-Lengths minus bytes received), an estimate of its backlog.
	Outstanding int64
	// Streams is the number of requests in progress on the path and
	// Weight the sum of their apps' priorities.
	Streams int
	Weight  int
	// Rate is the path's measured delivery rate in bytes/s (an EWMA of
	// the path's goodput, all its streams, while a response on it is
	// busy); before any sample, congestion window / SRTT; 0 when unknown.
	Rate float64
}

// Request is what a Scheduler knows of the request to place.
type Request struct {
	App      string // the app, by the client's AppRule
	Priority int    // the app's priority (>= 1; higher is more important)
	Pin      int    // path ID + 1 a stripe worker is bound to (0: none); bypasses Pick
}

// Scheduler places requests on paths (Cybertwin §IV: "a new QUIC stream on
// the selected QUIC connection specified by the path scheduler").
//
// Pick is called with at least one path, all of them connected and not
// suspected of a stall, and returns the ID of one of them. Done reports a
// finished request: the path it ended on, the response bytes it received
// there and how long it took (from the stream's opening). Both are called
// from many goroutines; implementations lock for themselves.
type Scheduler interface {
	Pick(req Request, paths []PathView) int
	Done(path int, bytes int64, d time.Duration)
}

// Scheduler names, for configuration.
const (
	SchedMinRTT   = "minrtt"
	SchedRR       = "rr"
	SchedLOB      = "lob"      // least outstanding bytes: aggregation
	SchedPriority = "priority" // weights by app priority
	SchedLearned  = "learned"  // pathsel on TCT per byte
	SchedECT      = "ect"      // earliest expected completion
	// DefaultScheduler is chosen by measurement: see README "Scheduler".
	DefaultScheduler = SchedPriority
)

// SchedulerNames lists the policies, for help texts.
var SchedulerNames = []string{SchedPriority, SchedECT, SchedLOB, SchedMinRTT, SchedRR, SchedLearned}

// NewScheduler builds the named policy over paths 0..n-1. seed drives the
// learned policy's random choices.
func NewScheduler(name string, n int, seed uint64) (Scheduler, error) {
	switch name {
	case SchedMinRTT:
		return minRTT{}, nil
	case SchedRR:
		return &roundRobin{}, nil
	case SchedLOB:
		return lob{}, nil
	case SchedPriority:
		return priority{}, nil
	case SchedLearned:
		return newLearned(n, seed)
	case SchedECT:
		return ect{}, nil
	}
	return nil, fmt.Errorf("unknown scheduler %q (want one of %v)", name, SchedulerNames)
}

// rttTie: RTTs closer than this are equal to minRTT, so that noise on
// near-equal paths does not decide (STYLE: hysteresis is a named constant).
const rttTie = 500 * time.Microsecond

type minRTT struct{}

func (minRTT) Pick(_ Request, ps []PathView) int {
	best := ps[0]
	for _, p := range ps[1:] {
		if p.SRTT+rttTie < best.SRTT || (absDur(p.SRTT-best.SRTT) <= rttTie && p.Streams < best.Streams) {
			best = p
		}
	}
	return best.ID
}
func (minRTT) Done(int, int64, time.Duration) {}

type roundRobin struct {
	mu   sync.Mutex
	next int
}

func (r *roundRobin) Pick(_ Request, ps []PathView) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The first path whose ID is >= next, wrapping: stable when paths come
	// and go.
	best := ps[0]
	for _, p := range ps {
		if p.ID >= r.next {
			best = p
			break
		}
	}
	r.next = best.ID + 1
	return best.ID
}
func (r *roundRobin) Done(int, int64, time.Duration) {}

// lob sends the request where the least response data is still expected,
// ties broken by fewer streams and then by RTT: two apps with large
// responses land on two paths (Cybertwin §V-B2's aggregation without
// splitting a stream).
type lob struct{}

func (lob) Pick(_ Request, ps []PathView) int {
	best := ps[0]
	for _, p := range ps[1:] {
		switch {
		case p.Outstanding < best.Outstanding:
			best = p
		case p.Outstanding == best.Outstanding && p.Streams < best.Streams:
			best = p
		case p.Outstanding == best.Outstanding && p.Streams == best.Streams && p.SRTT+rttTie < best.SRTT:
			best = p
		}
	}
	return best.ID
}
func (lob) Done(int, int64, time.Duration) {}

// ect sends the request where it would finish first: the path's RTT plus
// the time to drain what the path still owes (Outstanding) and a nominal
// share for each stream, at the path's measured rate. It is least
// outstanding bytes weighted by what each path can carry, so it aggregates
// two equal paths like lob and keeps short requests off a slow path like
// minrtt.
type ect struct{}

// ectUnit is the nominal size of a response not yet sized (its head has
// not arrived): a typical small object.
const ectUnit = 64 << 10

// DefaultRate stands for a path with no rate sample yet (ect here, the
// striping policy in the client).
const DefaultRate = 1 << 20

func (ect) Pick(_ Request, ps []PathView) int {
	known := knownRate(ps)
	score := func(p PathView) float64 {
		rate := p.Rate
		if rate <= 0 {
			rate = known // untried: as good as the best, so it is tried
		}
		if rate <= 0 {
			rate = DefaultRate
		}
		return p.SRTT.Seconds() + float64(p.Outstanding+int64(p.Streams+1)*ectUnit)/rate
	}
	best := ps[0]
	for _, p := range ps[1:] {
		if score(p) < score(best) {
			best = p
		}
	}
	return best.ID
}
func (ect) Done(int, int64, time.Duration) {}

// priority keeps the path that delivers soonest for the most important
// traffic: a request goes to the path with the least priority weight in
// progress, counting its own weight, scaled by when the path would
// deliver the request's first bytes (firstBytes) — so an important app
// shares a fast path with few others and unimportant ones spread out.
type priority struct{}

func (priority) Pick(r Request, ps []PathView) int {
	known := knownRate(ps)
	score := func(p PathView) float64 {
		return float64(p.Weight+r.Priority) * arrival(p, firstBytes, known)
	}
	best := ps[0]
	for _, p := range ps[1:] {
		if score(p) < score(best) {
			best = p
		}
	}
	return best.ID
}

// firstBytes is the response a request is placed by (priority): ectUnit,
// a typical small object, or the first quarter of a large GET's head that
// the original stream keeps (the client's StripeChunk). Ranked by SRTT
// alone, a 0.5 Mbit/s path 25 ms away took the request from a 65 Mbit/s
// one 120 ms away, and the response head waited 0.6–1.0 s behind the
// slow link's queue: striped, 16 MB took 1.15 × the time on the fast path
// alone on fake time (sweep38).
const firstBytes = ectUnit

// arrival is when size bytes requested now on p arrive, in seconds: a
// round trip and the bytes at the path's rate (the ECF and BLEST rule:
// where the bytes land first, not where the round trip is shortest). A
// path whose rate is unknown (0) counts as fast as known, the highest
// rate of the paths compared (so it is tried); with no rate at all, only
// the round trip counts. Minimum one millisecond: a path's own RTT of
// zero (loopback, fake time) does not make it free.
func arrival(p PathView, size int64, known float64) float64 {
	t := max(p.SRTT, time.Millisecond).Seconds()
	rate := p.Rate
	if rate <= 0 {
		rate = known
	}
	if rate > 0 {
		t += float64(size) / rate
	}
	return t
}

// knownRate is the highest measured rate among ps (0: none).
func knownRate(ps []PathView) float64 {
	known := 0.0
	for _, p := range ps {
		known = max(known, p.Rate)
	}
	return known
}

func (priority) Done(int, int64, time.Duration) {}

// learned asks pathsel (the hetquic preset of PCM's PSA) and teaches it the
// task completion time per byte of every finished request (PCM journal
// Eq. 4), so that it learns which path serves bytes fastest.
type learned struct {
	mu  sync.Mutex
	sel pathsel.Selector
	n   int
}

func newLearned(n int, seed uint64) (*learned, error) {
	sel, err := pathsel.New(pathsel.Default(), rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	if err != nil {
		return nil, err
	}
	for i := range n {
		if err := sel.AddPath(pathsel.PathID(i)); err != nil {
			return nil, err
		}
	}
	return &learned{sel: sel, n: n}, nil
}

// PathSet is a Scheduler that keeps state per path and hears of paths
// added and removed while the client runs (ct-client's ReloadPaths);
// path ids are never reused.
type PathSet interface {
	AddPath(id int) error
	RemovePath(id int) error
}

// AddPath makes path id one the selector may choose and learn.
func (l *learned) AddPath(id int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sel.AddPath(pathsel.PathID(id)); err != nil {
		return err
	}
	l.n = max(l.n, id+1)
	return nil
}

// RemovePath makes the selector forget path id.
func (l *learned) RemovePath(id int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sel.RemovePath(pathsel.PathID(id))
}

func (l *learned) Pick(_ Request, ps []PathView) int {
	l.mu.Lock()
	id, err := l.sel.Choose()
	l.mu.Unlock()
	if err == nil {
		for _, p := range ps {
			if p.ID == int(id) {
				return p.ID
			}
		}
	}
	// The choice is not usable now (down or suspected): least loaded.
	return lob{}.Pick(Request{}, ps)
}

// minLearnBytes: responses smaller than this say more about RTT than about
// a path's bytes per second; they are not taught.
const minLearnBytes = 1024

func (l *learned) Done(path int, bytes int64, d time.Duration) {
	if bytes < minLearnBytes || d <= 0 || path < 0 || path >= l.n {
		return
	}
	ms := float64(d) / float64(time.Millisecond)
	l.mu.Lock()
	l.sel.Observe(pathsel.PathID(path), ms/float64(bytes))
	l.mu.Unlock()
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
