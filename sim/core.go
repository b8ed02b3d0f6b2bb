// Package sim is hetquic's packet-level multipath transport simulator: a
// single-threaded discrete-event core in virtual time, links and topologies,
// an MPQUIC model (sim.Conn) with pluggable congestion control (sim/cc) and
// packet schedulers (sim/sched), and the applications that drive it.
//
// A run is reproducible bit for bit from (scenario, seed): events are kept in
// a heap ordered by (time, sequence number), every random choice draws from a
// per-component stream derived from (seed, component name), and nothing reads
// the wall clock or global state.
package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// event is one scheduled callback. seq breaks ties between events at the
// same time in the order they were scheduled, which makes runs deterministic.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
	// tm, when set, makes this a timer expiry: it runs only if the timer
	// still has generation gen (re-arming a timer costs no allocation and
	// leaves the stale entry to be skipped).
	tm  *Timer
	gen uint64
}

// Sim is the event loop. The zero value is not usable; call New.
type Sim struct {
	now    time.Duration
	seq    uint64
	seed   uint64
	heap   []event
	events uint64 // executed so far
	stop   bool
}

// New returns a simulator at virtual time 0 whose random streams derive from seed.
func New(seed uint64) *Sim { return &Sim{seed: seed, heap: make([]event, 0, 1024)} }

// Now is the current virtual time.
func (s *Sim) Now() time.Duration { return s.now }

// Events is the number of events executed so far.
func (s *Sim) Events() uint64 { return s.events }

// Seed is the seed the simulator was created with.
func (s *Sim) Seed() uint64 { return s.seed }

// At schedules fn at absolute virtual time t (clamped to now: the past is gone).
func (s *Sim) At(t time.Duration, fn func()) {
	if t < s.now {
		t = s.now
	}
	s.seq++
	s.push(event{at: t, seq: s.seq, fn: fn})
}

// After schedules fn d after now.
func (s *Sim) After(d time.Duration, fn func()) { s.At(s.now+d, fn) }

// Stop makes Run return after the current event.
func (s *Sim) Stop() { s.stop = true }

// Rand returns a random stream for the named component: PCG seeded with
// (seed, FNV-1a(name)). Streams are independent of each other and of the
// order in which they are created, so adding a component does not change the
// draws of the others.
func (s *Sim) Rand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(s.seed, h.Sum64()))
}

// Run executes events in time order until the queue is empty, Stop is
// called, or the next event lies after until (until ≤ 0: no limit). It
// returns the virtual time reached. progress, when not nil, is called about
// every progressEvery of virtual time with the current time.
func (s *Sim) Run(until time.Duration, progressEvery time.Duration, progress func(now time.Duration)) time.Duration {
	s.stop = false
	next := progressEvery
	for len(s.heap) > 0 && !s.stop {
		e := s.heap[0]
		if until > 0 && e.at > until {
			s.now = until
			return s.now
		}
		s.pop()
		s.now = e.at
		if progress != nil && progressEvery > 0 && s.now >= next {
			progress(s.now)
			for next <= s.now {
				next += progressEvery
			}
		}
		if e.tm != nil {
			if e.tm.gen != e.gen || !e.tm.set {
				continue // a stale timer entry: not an event
			}
			e.tm.set = false
			s.events++
			e.tm.fn()
			continue
		}
		s.events++
		e.fn()
	}
	return s.now
}

func (a event) before(b event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (s *Sim) push(e event) {
	s.heap = append(s.heap, e)
	h := s.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *Sim) pop() {
	h := s.heap
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
}

// Timer is a re-armable one-shot callback, as a transport keeps for loss
// detection and delayed ACKs. Re-arming does not remove the old heap entry;
// a generation counter makes stale entries no-ops.
type Timer struct {
	sim *Sim
	fn  func()
	gen uint64
	at  time.Duration
	set bool
}

// NewTimer returns an unarmed timer that will call fn.
func (s *Sim) NewTimer(fn func()) *Timer { return &Timer{sim: s, fn: fn} }

// Set arms the timer for absolute time t, replacing any earlier setting.
func (t *Timer) Set(at time.Duration) {
	if t.set && t.at == at {
		return
	}
	t.gen++
	t.at, t.set = at, true
	s := t.sim
	if at < s.now {
		at = s.now
	}
	s.seq++
	s.push(event{at: at, seq: s.seq, tm: t, gen: t.gen})
}

// Stop disarms the timer.
func (t *Timer) Stop() { t.set = false; t.gen++ }

// Armed reports whether the timer is set, and for when.
func (t *Timer) Armed() (time.Duration, bool) { return t.at, t.set }
