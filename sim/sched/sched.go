// Package sched holds the simulator's multipath packet schedulers. A
// scheduler decides, each time the connection could send, which path carries
// the next packet and (for schedulers that send out of order) which chunk.
// Schedulers are deterministic functions of the View and their own state.
package sched

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// PathView is what a scheduler knows of one path: the sender's RFC 9002
// state, its congestion controller's window, and the MMQUIC ACK fields.
type PathView struct {
	ID                   int
	SRTT, RTTVar, MinRTT time.Duration
	LatestRTT            time.Duration
	HasRTT               bool // at least one RTT sample (else SRTT is the initial 333 ms)
	Cwnd, InFlight       int  // bytes
	Ssthresh             int  // bytes (MaxInt: unset)
	InSlowStart          bool
	PTOCount             int
	RTO                  time.Duration // current probe timeout (RFC 9002 §6.2.1)
	LossRate             float64       // EWMA of declared losses per packet sent
	// BDP is the MMQUIC ACK's bandwidth-delay product in bytes now, in
	// 0.5 s and in 1 s (thesis §2.4.2, Fig. 2.3); 0 when unknown.
	BDP [3]float64
	// Weight is the min-FCT path weight p_w (min-FCT Eq. 19) when the path
	// set came from that scheme; 0 otherwise.
	Weight float64
	// PacingHeld is set while the path's pacer holds its next packet back
	// (only paced controllers, see cc.Pacer): the path cannot send now even
	// with window space, and the connection wakes itself when it can.
	PacingHeld bool
}

// Space is the congestion window left, in bytes.
func (p *PathView) Space() int { return p.Cwnd - p.InFlight }

// CanSend reports whether a packet of size bytes fits in the window and
// the pacer lets it go now.
func (p *PathView) CanSend(size int) bool { return !p.PacingHeld && p.InFlight+size <= p.Cwnd }

// Queue lets a scheduler address chunks (MSS-sized pieces of the stream,
// numbered from 0) that are waiting to be sent.
type Queue interface {
	// PendingAt returns the i-th pending chunk (0 ≤ i < View.Pending):
	// retransmissions in stream order first, then new chunks in order.
	PendingAt(i int) int
	// AppendPending appends the first n pending chunks (n ≤ View.Pending)
	// to dst: PendingAt(0) … PendingAt(n−1) in one walk.
	AppendPending(dst []int, n int) []int
	// IsPending reports whether chunk waits to be sent (not in flight, not acknowledged).
	IsPending(chunk int) bool
	// NotSentOn returns the lowest unacknowledged chunk never sent on path,
	// for redundant scheduling; ok is false when there is none.
	NotSentOn(path int) (chunk int, ok bool)
	// StreamOf describes the stream chunk belongs to (ID −1: unknown), so
	// that a scheduler can decide per packet with the application's
	// priorities and deadlines.
	StreamOf(chunk int) StreamInfo
}

// StreamInfo is what the application said about a chunk's stream.
type StreamInfo struct {
	ID       int
	Priority int           // lower is more urgent (RFC 9218 urgency)
	Deadline time.Duration // absolute virtual time; 0: none
	Offset   int           // the chunk's position in its stream
}

// View is the connection's state at a send opportunity.
type View struct {
	Now         time.Duration
	Paths       []PathView // indexed by path id
	PacketBytes int        // wire size of a data packet
	Pending     int        // chunks that may be sent now
	Queue       Queue
	// SendWindow is the flow-control window left in bytes (BLEST's
	// "send window"), or MaxInt without flow control.
	SendWindow int
}

// Decision says what to send next.
type Decision struct {
	Path  int // path id, or Wait
	Chunk int // chunk to send, or Head
}

const (
	// Wait (as Decision.Path): send nothing until the next ACK or timer.
	Wait = -1
	// Head (as Decision.Chunk): the first pending chunk.
	Head = -1
)

// Scheduler picks the path of the next packet.
type Scheduler interface {
	// Name is the registry name.
	Name() string
	// Next is called repeatedly while it returns a path: the connection
	// sends one packet per call and updates v. It must return Wait rather
	// than a path whose window is full, and only return Chunk values that
	// v.Queue reports pending (or, for redundant, NotSentOn).
	Next(v *View) Decision
}

// New returns the named scheduler for a connection with nPaths paths
// (reserved for schedulers that size state by path; none needs it yet).
func New(name string, nPaths int) (Scheduler, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown scheduler %q (want one of %v)", name, Names())
	}
	return f(nPaths), nil
}

// Names lists the registered schedulers.
func Names() []string {
	return slices.Sorted(maps.Keys(registry))
}

// registry maps each scheduler's name to its constructor; a new scheduler
// is one line here.
var registry = map[string]func(nPaths int) Scheduler{
	"rr":        func(int) Scheduler { return &RoundRobin{} },
	"minrtt":    func(int) Scheduler { return &MinRTT{name: "minrtt"} },
	"lrf":       func(int) Scheduler { return &MinRTT{name: "lrf"} },
	"blest":     func(int) Scheduler { return &BLEST{Lambda: 1} },
	"ecf":       func(int) Scheduler { return &ECF{Beta: 0.25} },
	"late":      func(int) Scheduler { return &LATE{} },
	"redundant": func(int) Scheduler { return &Redundant{} },
	"mams":      func(int) Scheduler { return NewMAMS() },
	"weighted":  func(int) Scheduler { return &Weighted{} },
	"single":    func(int) Scheduler { return &Single{} },
}

// fastest returns the path with the lowest smoothed RTT among those ok
// accepts, or -1. Ties go to the lower id.
func fastest(v *View, ok func(*PathView) bool) int {
	best := -1
	for i := range v.Paths {
		p := &v.Paths[i]
		if !ok(p) {
			continue
		}
		if best < 0 || p.SRTT < v.Paths[best].SRTT {
			best = i
		}
	}
	return best
}

func anyPath(*PathView) bool { return true }

// RoundRobin sends on the paths in turn, skipping those with a full window
// (MPQUIC-RR, thesis §2.6).
type RoundRobin struct{ last int }

func (*RoundRobin) Name() string { return "rr" }
func (r *RoundRobin) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	n := len(v.Paths)
	for k := 1; k <= n; k++ {
		i := (r.last + k) % n
		if v.Paths[i].CanSend(v.PacketBytes) {
			r.last = i
			return Decision{i, Head}
		}
	}
	return Decision{Wait, Head}
}

// MinRTT sends on the path with the lowest smoothed RTT that has window
// space (the default of MPTCP and MPQUIC; the min-FCT paper's LRF,
// "lowest-RTT-first").
type MinRTT struct{ name string }

func (m *MinRTT) Name() string { return m.name }
func (m *MinRTT) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	i := fastest(v, func(p *PathView) bool { return p.CanSend(v.PacketBytes) })
	if i < 0 {
		return Decision{Wait, Head}
	}
	return Decision{i, Head}
}

// Single uses only path 0 (single-path QUIC).
type Single struct{}

func (Single) Name() string { return "single" }
func (Single) Next(v *View) Decision {
	if v.Pending > 0 && v.Paths[0].CanSend(v.PacketBytes) {
		return Decision{0, Head}
	}
	return Decision{Wait, Head}
}

// Weighted sends on the path with the highest min-FCT weight p_w that has
// window space: "the higher P_w, the higher priority the data needs to be
// scheduled for transmission first" (min-FCT §4.2, Eq. 19).
type Weighted struct{}

func (Weighted) Name() string { return "weighted" }
func (Weighted) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	best := -1
	for i := range v.Paths {
		p := &v.Paths[i]
		if p.CanSend(v.PacketBytes) && (best < 0 || p.Weight > v.Paths[best].Weight) {
			best = i
		}
	}
	if best < 0 {
		return Decision{Wait, Head}
	}
	return Decision{best, Head}
}

// Redundant sends every chunk on every path (each path walks the stream on
// its own; the first copy to arrive counts).
type Redundant struct{}

func (Redundant) Name() string { return "redundant" }
func (Redundant) Next(v *View) Decision {
	for i := range v.Paths {
		if !v.Paths[i].CanSend(v.PacketBytes) {
			continue
		}
		if c, ok := v.Queue.NotSentOn(i); ok {
			return Decision{i, c}
		}
	}
	return Decision{Wait, Head}
}

// BLEST (Ferlin et al., IFIP Networking 2016): send on the fastest path
// when it has space; otherwise use the slower path only if the fast path
// could not send X more bytes in the slow path's RTT without running into
// the send window, X = MSS·(cwnd_f + (rtt_s/rtt_f − 1)/2)·rtt_s/rtt_f and
// λ·X > window − (inflight_s + 1)·MSS ⇒ wait. λ is fixed here (the paper
// adapts it on spurious waits).
type BLEST struct{ Lambda float64 }

func (*BLEST) Name() string { return "blest" }
func (b *BLEST) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	f := fastest(v, anyPath)
	if v.Paths[f].CanSend(v.PacketBytes) {
		return Decision{f, Head}
	}
	s := fastest(v, func(p *PathView) bool { return p.ID != f && p.CanSend(v.PacketBytes) })
	if s < 0 {
		return Decision{Wait, Head}
	}
	pf, ps := &v.Paths[f], &v.Paths[s]
	mss := float64(v.PacketBytes)
	ratio := float64(ps.SRTT) / float64(max(pf.SRTT, time.Microsecond))
	cwndF := float64(pf.Cwnd) / mss
	x := mss * (cwndF + (ratio-1)/2) * ratio
	if b.Lambda*x > float64(v.SendWindow)-float64(ps.InFlight)-mss {
		return Decision{Wait, Head}
	}
	return Decision{s, Head}
}

// ECF (Lim et al., CoNEXT 2017): when the fastest path is full, send on the
// slower path only if waiting for the fast path would finish later:
// with k pending packets, n = 1 + k/cwnd_f, δ = max(σ_f, σ_s), wait when
// n·rtt_f < (1 + waiting·β)(rtt_s + δ) and (k/cwnd_s)·rtt_s ≥ 2·rtt_f + δ.
type ECF struct {
	Beta    float64
	waiting bool
}

func (*ECF) Name() string { return "ecf" }
func (e *ECF) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	f := fastest(v, anyPath)
	if v.Paths[f].CanSend(v.PacketBytes) {
		e.waiting = false
		return Decision{f, Head}
	}
	s := fastest(v, func(p *PathView) bool { return p.ID != f && p.CanSend(v.PacketBytes) })
	if s < 0 {
		return Decision{Wait, Head}
	}
	pf, ps := &v.Paths[f], &v.Paths[s]
	mss := float64(v.PacketBytes)
	k := float64(v.Pending)
	cwndF, cwndS := max(float64(pf.Cwnd)/mss, 1), max(float64(ps.Cwnd)/mss, 1)
	rf, rs := pf.SRTT.Seconds(), ps.SRTT.Seconds()
	delta := max(pf.RTTVar, ps.RTTVar).Seconds()
	n := 1 + k/cwndF
	w := 0.0
	if e.waiting {
		w = 1
	}
	if n*rf < (1+w*e.Beta)*(rs+delta) {
		if k/cwndS*rs >= 2*rf+delta {
			e.waiting = true
			return Decision{Wait, Head}
		}
	}
	e.waiting = false
	return Decision{s, Head}
}

// Func is a Scheduler made of a function: the per-packet hook through which
// an external decision maker (an RL agent, a bandit) picks the path.
func Func(name string, next func(v *View) Decision) Scheduler { return funcScheduler{name, next} }

type funcScheduler struct {
	name string
	next func(v *View) Decision
}

func (f funcScheduler) Name() string          { return f.name }
func (f funcScheduler) Next(v *View) Decision { return f.next(v) }
