package env

import (
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/peekaboo"
	"github.com/hetquic/hetquic/ride"
)

// peekabooSendWindow is the flow-control window Peekaboo's context reads
// (swnd): the connection's stream window, constant here.
const peekabooSendWindow = 6 << 20

// Peekaboo is the shared Peekaboo scheduler (package peekaboo, also used
// by QC-MAB) deciding per tile: the fastest path when its window has room,
// else LinUCB chooses between a slower path with room and waiting for the
// fast one — at tile granularity, waiting means queueing the tile on the
// fast path. Its reward is Peekaboo's: MSS over the time from the decision
// to the tile's delivery.
type Peekaboo struct {
	s       *peekaboo.Scheduler
	rng     *rand.Rand
	payload float64
	last    peekaboo.Ticket
}

// NewPeekaboo returns Peekaboo for paths paths with its code's settings.
func NewPeekaboo(paths int, seed uint64) (*Peekaboo, error) {
	ids := make([]int, paths)
	for i := range ids {
		ids[i] = i
	}
	s, err := peekaboo.New(peekaboo.DefaultConfig(ids...))
	if err != nil {
		return nil, err
	}
	return &Peekaboo{s: s, rng: rand.New(rand.NewPCG(seed, 0x5045454b)), payload: 1448}, nil
}

func (*Peekaboo) Name() string { return "peekaboo" }

func (p *Peekaboo) Act(st *ride.State) int {
	ps := make([]peekaboo.Path, len(st.Paths))
	fast := 0
	for m, x := range st.Paths {
		ps[m] = peekaboo.Path{ID: m, Cwnd: x.Cwnd, Inflight: x.Cwnd - x.AvailCwnd, SendWindow: peekabooSendWindow,
			RTT: x.SRTT.Seconds(), CanSend: x.CanSend}
		if x.SRTT < st.Paths[fast].SRTT {
			fast = m
		}
	}
	d, err := p.s.Decide(ps, p.rng)
	if err != nil {
		panic(err) // the state always lists every configured path
	}
	p.last = d.Ticket
	if !d.Send {
		return fast
	}
	return d.Path
}

// Tag implements Learner: the ticket of the decision just made.
func (p *Peekaboo) Tag() uint64 {
	t := p.last
	p.last = 0
	return uint64(t)
}

// Delivered implements Learner.
func (p *Peekaboo) Delivered(tag uint64, elapsed time.Duration, _ int) {
	r, err := peekaboo.Reward(p.payload, elapsed.Seconds())
	if err != nil {
		p.s.Forget(peekaboo.Ticket(tag))
		return
	}
	_ = p.s.Learn(peekaboo.Ticket(tag), r)
}
