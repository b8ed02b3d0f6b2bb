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
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// A heap entry's key packs the event's sequence number above the slot that
// holds its callback, so that entries are two words with no pointers: the
// sift loops then move plain integers and the garbage collector's write
// barriers never fire there (a profile showed a third of the loop's time
// went to bulkBarrierPreWrite while entries carried a func and a *Timer).
const (
	// slotBits bounds the events scheduled at once to 2^24 (16.7 M; a
	// pending event is a timer or a packet on the wire, so a run needs
	// ~10^5 even with 1000 flows).
	slotBits = 24
	slotMask = 1<<slotBits - 1
	// maxSeq bounds the events scheduled over a run to 2^40 (about 30 h
	// of wall time at 10 M events/s).
	maxSeq = 1<<(64-slotBits) - 1
)

// entry is one scheduled event in the heap. Entries are ordered by (at,
// key); key's high bits are the sequence number, unique per scheduling, so
// ties between events at the same time go in the order they were
// scheduled, which makes runs deterministic.
type entry struct {
	at  time.Duration
	key uint64
}

func (a entry) before(b entry) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// action is what an event does: call fn, deliver pkt to its next hop (a
// packet's arrival costs no closure), or fire timer tm. A timer keeps its
// slot for life; the others are freed when their event runs.
type action struct {
	fn  func()
	pkt *Packet
	tm  *Timer
}

// Sim is the event loop. The zero value is not usable; call New.
type Sim struct {
	now    time.Duration
	seq    uint64
	seed   uint64
	heap   []entry
	slots  []action // by slot: what each scheduled event does
	pos    []int32  // pos[slot]: the slot's index in heap while scheduled
	free   []int32  // freed slots, reused last in first out
	events uint64   // executed so far
	stop   bool
	ctx    context.Context // Run returns once it ends (nil: never)
}

// ctxEvery is how many events Run executes between two looks at its
// context: at the core's 5-10 M events/s that is well under a millisecond
// of wall time, so Ctrl-C is answered at once, while the look itself (an
// atomic load) costs nothing measurable against 4096 events.
const ctxEvery = 1 << 12

// New returns a simulator at virtual time 0 whose random streams derive from seed.
func New(seed uint64) *Sim { return &Sim{seed: seed, heap: make([]entry, 0, 1024)} }

// Now is the current virtual time.
func (s *Sim) Now() time.Duration { return s.now }

// Events is the number of events executed so far.
func (s *Sim) Events() uint64 { return s.events }

// Pending is the number of events scheduled and not yet run: every heap
// entry is a live event (re-arming or stopping a timer moves or removes its
// one entry).
func (s *Sim) Pending() int { return len(s.heap) }

// Seed is the seed the simulator was created with.
func (s *Sim) Seed() uint64 { return s.seed }

// At schedules fn at absolute virtual time t (clamped to now: the past is gone).
func (s *Sim) At(t time.Duration, fn func()) { s.schedule(t, s.alloc(action{fn: fn})) }

// After schedules fn d after now.
func (s *Sim) After(d time.Duration, fn func()) { s.At(s.now+d, fn) }

// arrive schedules packet p's arrival at the end of its current hop at t.
func (s *Sim) arrive(t time.Duration, p *Packet) { s.schedule(t, s.alloc(action{pkt: p})) }

// Stop makes Run return after the current event.
func (s *Sim) Stop() { s.stop = true }

// StopOn makes Run return, within ctxEvery events, once ctx ends (Ctrl-C
// during a long run): the run is then incomplete and its caller reports
// ctx.Err() rather than results. Virtual time is untouched, so a run whose
// ctx never ends is the same bit for bit.
func (s *Sim) StopOn(ctx context.Context) { s.ctx = ctx }

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
// called, the context of StopOn ends, or the next event lies after until (until ≤ 0: no limit). It
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
		s.remove(0)
		s.now = e.at
		if progress != nil && progressEvery > 0 && s.now >= next {
			progress(s.now)
			for next <= s.now {
				next += progressEvery
			}
		}
		s.events++
		if s.ctx != nil && s.events%ctxEvery == 0 && s.ctx.Err() != nil {
			s.stop = true
		}
		id := int32(e.key & slotMask)
		switch sl := s.slots[id]; {
		case sl.tm != nil:
			sl.tm.set = false
			sl.tm.fn()
		case sl.pkt != nil:
			s.release(id)
			forward(sl.pkt)
		default:
			s.release(id)
			sl.fn()
		}
	}
	return s.now
}

// alloc takes a free slot (or a new one) for a.
func (s *Sim) alloc(a action) int32 {
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		s.slots[id] = a
		return id
	}
	if len(s.slots) > slotMask {
		panic(fmt.Sprintf("sim: more than %d events scheduled at once", slotMask+1))
	}
	s.slots = append(s.slots, a)
	s.pos = append(s.pos, -1)
	return int32(len(s.slots) - 1)
}

// release frees a one-shot slot once its event has been taken off the heap.
func (s *Sim) release(id int32) {
	s.slots[id] = action{}
	s.free = append(s.free, id)
}

// nextKey is the key of an event for slot id scheduled now: a fresh
// sequence number above the slot.
func (s *Sim) nextKey(id int32) uint64 {
	if s.seq == maxSeq {
		panic(fmt.Sprintf("sim: more than %d events scheduled in one run", uint64(maxSeq)))
	}
	s.seq++
	return s.seq<<slotBits | uint64(id)
}

// schedule puts slot id's event on the heap at t (clamped to now).
func (s *Sim) schedule(t time.Duration, id int32) {
	e := entry{at: max(t, s.now), key: s.nextKey(id)}
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	s.pos[id] = int32(i)
	s.up(i)
}

// set places e at heap index i and records where its slot is.
func (s *Sim) set(i int, e entry) {
	s.heap[i] = e
	s.pos[e.key&slotMask] = int32(i)
}

// up moves the entry at i toward the root until its parent is earlier.
func (s *Sim) up(i int) {
	h := s.heap
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(h[p]) {
			break
		}
		s.set(i, h[p])
		i = p
	}
	s.set(i, e)
}

// down moves the entry at i toward the leaves until its children are later.
func (s *Sim) down(i int) {
	h := s.heap
	n := len(h)
	e := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(e) {
			break
		}
		s.set(i, h[m])
		i = m
	}
	s.set(i, e)
}

// remove takes the entry at heap index i out of the heap.
func (s *Sim) remove(i int) {
	h := s.heap
	n := len(h) - 1
	s.pos[h[i].key&slotMask] = -1
	if i != n {
		moved := h[n]
		s.heap = h[:n]
		s.set(i, moved)
		if i > 0 && moved.before(h[(i-1)/2]) {
			s.up(i)
		} else {
			s.down(i)
		}
		return
	}
	s.heap = h[:n]
}

// Timer is a re-armable one-shot callback, as a transport keeps for loss
// detection and delayed ACKs. A timer owns one heap slot: re-arming moves
// its entry, stopping removes it, so the heap holds no stale entries and
// arming allocates nothing.
type Timer struct {
	sim *Sim
	fn  func()
	id  int32
	at  time.Duration
	set bool
}

// NewTimer returns an unarmed timer that will call fn.
func (s *Sim) NewTimer(fn func()) *Timer {
	t := &Timer{sim: s, fn: fn}
	t.id = s.alloc(action{tm: t})
	return t
}

// Set arms the timer for absolute time t, replacing any earlier setting. A
// new setting takes a fresh sequence number, as a newly scheduled event
// would: it runs after the events already scheduled for the same time.
func (t *Timer) Set(at time.Duration) {
	if t.set && t.at == at {
		return
	}
	s := t.sim
	t.at = at
	if !t.set {
		t.set = true
		s.schedule(at, t.id)
		return
	}
	i := int(s.pos[t.id])
	old := s.heap[i]
	e := entry{at: max(at, s.now), key: s.nextKey(t.id)}
	s.heap[i] = e
	if e.before(old) {
		s.up(i)
	} else {
		s.down(i)
	}
}

// Stop disarms the timer.
func (t *Timer) Stop() {
	if t.set {
		t.sim.remove(int(t.sim.pos[t.id]))
		t.set = false
	}
}

// Armed reports whether the timer is set, and for when.
func (t *Timer) Armed() (time.Duration, bool) { return t.at, t.set }
