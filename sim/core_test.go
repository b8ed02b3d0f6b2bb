package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

func TestEventOrderTieBreak(t *testing.T) {
	s := New(1)
	var got []int
	for i := 0; i < 100; i++ {
		i := i
		s.At(time.Duration(i%3)*time.Millisecond, func() { got = append(got, i) })
	}
	s.Run(0, 0, nil)
	last := -1
	for k, i := range got {
		if k > 0 && i%3 == got[k-1]%3 && i < last {
			t.Fatalf("events at the same time ran out of schedule order: %v", got)
		}
		if k > 0 && i%3 < got[k-1]%3 {
			t.Fatalf("time order violated: %v", got)
		}
		last = i
	}
	if len(got) != 100 {
		t.Fatalf("ran %d events, want 100", len(got))
	}
}

func TestRunUntil(t *testing.T) {
	s := New(1)
	n := 0
	var tick func()
	tick = func() { n++; s.After(time.Second, tick) }
	s.At(0, tick)
	if end := s.Run(10*time.Second, 0, nil); end != 10*time.Second || n != 11 {
		t.Fatalf("Run(10s) ended at %v after %d ticks, want 10s and 11", end, n)
	}
}

func TestRandStreamsIndependent(t *testing.T) {
	a := New(7).Rand("link/a").Uint64()
	s := New(7)
	s.Rand("other")
	if b := s.Rand("link/a").Uint64(); a != b {
		t.Fatal("a stream depends on which other streams exist")
	}
	if New(8).Rand("link/a").Uint64() == a {
		t.Fatal("seed does not change the stream")
	}
}

// TestReproducible runs the same lossy, jittery two-path transfer twice and
// requires identical delivery traces, and a different trace for another seed.
func TestReproducible(t *testing.T) {
	trace := func(seed uint64, sch string) []Delivery {
		s := New(seed)
		paths := dumbbell(s, 2, 10, 20*time.Millisecond, 0.02, 50)
		paths[1].Fwd[0].SetParams(LinkParams{Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, RateBps: 5e6,
			GE: &scenario.GilbertElliott{PGoodBad: 0.01, PBadGood: 0.3, LossBad: 0.5}, QueuePkts: 50})
		c, err := NewConn(s, ConnConfig{Scheduler: sch}, paths)
		if err != nil {
			t.Fatal(err)
		}
		var out []Delivery
		c.Receiver().OnDeliver = func(d Delivery) { out = append(out, d) }
		c.Write(2 << 20)
		s.Run(time.Minute, 0, nil)
		return out
	}
	for _, sch := range []string{"minrtt", "mams", "late"} {
		a, b := trace(3, sch), trace(3, sch)
		if len(a) != len(b) {
			t.Fatalf("%s: runs delivered %d and %d chunks", sch, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: delivery %d differs: %+v vs %+v", sch, i, a[i], b[i])
			}
		}
		c := trace(4, sch)
		same := len(a) == len(c)
		for i := 0; same && i < len(a); i++ {
			same = a[i] == c[i]
		}
		if same {
			t.Fatalf("%s: seeds 3 and 4 gave identical runs", sch)
		}
	}
}

func TestLinkRateAndQueue(t *testing.T) {
	s := New(1)
	l := NewLink(s, "l", LinkParams{Delay: 10 * time.Millisecond, RateBps: 12e6, QueuePkts: 5})
	var arrivals []time.Duration
	sink := receiverFunc(func(p *Packet) { arrivals = append(arrivals, s.Now()) })
	for i := 0; i < 10; i++ {
		Send(&Packet{Size: 1500}, []*Link{l}, sink)
	}
	s.Run(0, 0, nil)
	// 5 queued (the first on the wire counts), 1 ms each at 12 Mbit/s.
	if len(arrivals) != 5 || l.Stats.QueueDrops != 5 {
		t.Fatalf("delivered %d, dropped %d; want 5 and 5", len(arrivals), l.Stats.QueueDrops)
	}
	for i, a := range arrivals {
		if want := time.Duration(i+1)*time.Millisecond + 10*time.Millisecond; a != want {
			t.Errorf("packet %d arrived at %v, want %v", i, a, want)
		}
	}
}

func TestLinkJitterKeepsOrder(t *testing.T) {
	s := New(1)
	l := NewLink(s, "l", LinkParams{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, RateBps: 100e6, QueuePkts: 1000})
	var got []uint64
	sink := receiverFunc(func(p *Packet) { got = append(got, p.PN) })
	for i := 0; i < 500; i++ {
		i := i
		s.At(time.Duration(i)*100*time.Microsecond, func() { Send(&Packet{Size: 1000, PN: uint64(i)}, []*Link{l}, sink) })
	}
	s.Run(0, 0, nil)
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("reordered at %d without reorder set", i)
		}
	}
}

func TestGilbertElliottMeanLoss(t *testing.T) {
	s := New(1)
	ge := &scenario.GilbertElliott{PGoodBad: 0.02, PBadGood: 0.2, LossGood: 0.001, LossBad: 0.4}
	l := NewLink(s, "l", LinkParams{GE: ge})
	sink := receiverFunc(func(*Packet) {})
	const n = 200000
	for i := 0; i < n; i++ {
		Send(&Packet{Size: 100}, []*Link{l}, sink)
	}
	got := float64(l.Stats.LossDrops) / n
	if want := ge.MeanLoss(); math.Abs(got-want) > 0.1*want {
		t.Fatalf("GE loss %.4f, want %.4f ±10%%", got, want)
	}
}

type receiverFunc func(*Packet)

func (f receiverFunc) Receive(p *Packet) { f(p) }

// TestTimerNoStaleEntries: re-arming and stopping a timer moves or removes
// its one heap entry, so the heap holds only live events.
func TestTimerNoStaleEntries(t *testing.T) {
	s := New(1)
	fired := 0
	tm := s.NewTimer(func() { fired++ })
	for i := 0; i < 1000; i++ {
		tm.Set(time.Duration(1000-i) * time.Millisecond)
	}
	if n := s.Pending(); n != 1 {
		t.Fatalf("after 1000 re-arms the heap holds %d entries, want 1", n)
	}
	tm.Stop()
	if n := s.Pending(); n != 0 {
		t.Fatalf("after Stop the heap holds %d entries, want 0", n)
	}
	tm.Set(time.Second)
	s.Run(0, 0, nil)
	if fired != 1 || s.Events() != 1 || s.Now() != time.Second {
		t.Fatalf("fired %d times, %d events, ended at %v; want 1, 1, 1s", fired, s.Events(), s.Now())
	}
}

// eventQueue is what TestHeapMatchesReference drives: the simulator, or
// refQueue.
type eventQueue interface {
	Now() time.Duration
	After(d time.Duration, fn func())
	SetTimer(k int, at time.Duration)
	StopTimer(k int)
	Run()
}

type simQueue struct {
	*Sim
	timers []*Timer
}

func (q *simQueue) SetTimer(k int, at time.Duration) { q.timers[k].Set(at) }
func (q *simQueue) StopTimer(k int)                  { q.timers[k].Stop() }
func (q *simQueue) Run()                             { q.Sim.Run(0, 0, nil) }

// refQueue is the simulator's event queue as it was before the indexed
// heap, written as plainly as possible: a list scanned for the earliest
// (time, sequence) entry, where re-arming a timer adds an entry and bumps
// the timer's generation, and entries of an older generation are skipped.
type refQueue struct {
	now  time.Duration
	seq  uint64
	q    []refEvent
	gen  []int
	at   []time.Duration
	set  []bool
	fire func(k int)
}

type refEvent struct {
	at    time.Duration
	seq   uint64
	fn    func()
	timer int // −1: not a timer
	gen   int
}

func (q *refQueue) Now() time.Duration { return q.now }

func (q *refQueue) After(d time.Duration, fn func()) {
	q.seq++
	q.q = append(q.q, refEvent{at: q.now + d, seq: q.seq, fn: fn, timer: -1})
}

func (q *refQueue) SetTimer(k int, at time.Duration) {
	if q.set[k] && q.at[k] == at {
		return
	}
	q.gen[k]++
	q.at[k], q.set[k] = at, true
	q.seq++
	q.q = append(q.q, refEvent{at: max(at, q.now), seq: q.seq, timer: k, gen: q.gen[k]})
}

func (q *refQueue) StopTimer(k int) { q.set[k] = false; q.gen[k]++ }

func (q *refQueue) Run() {
	for len(q.q) > 0 {
		m := 0
		for i, e := range q.q {
			if e.at < q.q[m].at || (e.at == q.q[m].at && e.seq < q.q[m].seq) {
				m = i
			}
		}
		e := q.q[m]
		q.q = append(q.q[:m], q.q[m+1:]...)
		q.now = e.at
		switch {
		case e.timer < 0:
			e.fn()
		case q.set[e.timer] && q.gen[e.timer] == e.gen:
			q.set[e.timer] = false
			q.fire(e.timer)
		}
	}
}

// record is one event run: its id (timers: −1 − index) and time.
type record struct {
	id int
	at time.Duration
}

// script drives q with a random mix of events, timer re-arms and stops,
// also from inside callbacks, drawn from seed; fireTimer is set to the
// timers' callback. It returns the events in the order they ran. Two
// queues that run events in the same order draw the same script.
func script(q eventQueue, fireTimer *func(k int), seed uint64) []record {
	const timers = 8
	rng := rand.New(rand.NewPCG(seed, 0))
	var got []record
	next := 0
	var act func(depth int)
	fire := func(id, depth int) {
		got = append(got, record{id, q.Now()})
		if depth < 3 {
			for k := rng.IntN(3); k > 0; k-- {
				act(depth + 1)
			}
		}
	}
	*fireTimer = func(k int) { fire(-1-k, 1) }
	act = func(depth int) {
		d := time.Duration(rng.IntN(20)) * time.Millisecond
		switch k := rng.IntN(2 * timers); {
		case k < timers && rng.IntN(4) == 0:
			q.StopTimer(k)
		case k < timers:
			q.SetTimer(k, q.Now()+d)
		default:
			id := next
			next++
			q.After(d, func() { fire(id, depth) })
		}
	}
	for i := 0; i < 200; i++ {
		act(0)
	}
	q.Run()
	return got
}

// TestHeapMatchesReference: the indexed heap runs events in exactly the
// order of the generation-checked list (the simulator before it), so runs
// stay bit for bit what they were.
func TestHeapMatchesReference(t *testing.T) {
	const timers = 8
	for seed := uint64(1); seed <= 50; seed++ {
		var fireSim, fireRef func(k int)
		sq := &simQueue{Sim: New(seed)}
		for k := 0; k < timers; k++ {
			k := k
			sq.timers = append(sq.timers, sq.NewTimer(func() { fireSim(k) }))
		}
		rq := &refQueue{gen: make([]int, timers), at: make([]time.Duration, timers), set: make([]bool, timers)}
		rq.fire = func(k int) { fireRef(k) }
		got := script(sq, &fireSim, seed)
		want := script(rq, &fireRef, seed)
		if len(got) < 150 {
			t.Fatalf("seed %d: only %d events ran", seed, len(got))
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: ran %d events, reference %d", seed, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("seed %d: event %d is %+v, reference %+v", seed, i, got[i], want[i])
			}
		}
		if sq.Pending() != 0 {
			t.Fatalf("seed %d: %d entries left after Run", seed, sq.Pending())
		}
	}
}

// A run whose context ends stops within ctxEvery events (Ctrl-C inside a
// long run); one whose context never ends runs every event.
func TestStopOn(t *testing.T) {
	run := func(ctx context.Context) uint64 {
		s := New(1)
		s.StopOn(ctx)
		var tick func()
		n := 0
		tick = func() {
			if n++; n < 10*ctxEvery {
				s.After(time.Millisecond, tick)
			}
		}
		s.At(0, tick)
		s.Run(0, 0, nil)
		return s.Events()
	}
	if got := run(context.Background()); got != 10*ctxEvery {
		t.Errorf("live context: %d events, want %d", got, 10*ctxEvery)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := run(ctx); got != ctxEvery {
		t.Errorf("ended context: %d events, want %d (one look's worth)", got, ctxEvery)
	}
}
