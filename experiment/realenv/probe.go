package realenv

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
)

// sideProbes runs a run's out-of-band probes of idle paths on side
// connections (pcm.SideProber) on a goroutine of its own, so that a probe
// never delays a request: Probe asks for a path to be probed, and Answers
// hands out the answers that came back since it was last called. The side
// connections are dialled on the first probe, on that goroutine too.
type sideProbes struct {
	dial   func(context.Context) (*pcm.SideProber, error)
	ask    chan int
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	answers []experiment.ProbeAnswer // came back, not handed out yet
	pending []bool                   // a probe of the path is asked or under way
	prober  *pcm.SideProber          // set by loop's goroutine
}

// probeTimeout bounds one probe: a path whose probe takes longer is read
// as lost (the path may be down).
const probeTimeout = time.Second

// sideDialTimeout bounds dialling the side connections (a handshake per
// path); a dial that fails or takes longer measures +Inf and is tried again
// at the next probe.
const sideDialTimeout = 10 * time.Second

func newSideProbes(k int, dial func(context.Context) (*pcm.SideProber, error)) *sideProbes {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sideProbes{dial: dial, ask: make(chan int, k), cancel: cancel, done: make(chan struct{}), pending: make([]bool, k)}
	go s.loop(ctx)
	return s
}

// Probe asks for a probe of path p, unless one is already asked or under
// way; its answer comes through Answers.
func (s *sideProbes) Probe(p pathsel.PathID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pending[p] {
		s.pending[p] = true
		s.ask <- int(p) // room for every path: never blocks
	}
}

// Answers hands out the answers that came back since the last call.
func (s *sideProbes) Answers() []experiment.ProbeAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers
	s.answers = nil
	return a
}

func (s *sideProbes) loop(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.ask:
			v := s.probe(ctx, p)
			s.mu.Lock()
			s.answers = append(s.answers, experiment.ProbeAnswer{P: pathsel.PathID(p), RTTms: v})
			s.pending[p] = false
			s.mu.Unlock()
		}
	}
}

// probe measures path p, dialling the side connections first if need be;
// a failed dial measures +Inf (and is tried again at the next probe).
func (s *sideProbes) probe(ctx context.Context, p int) float64 {
	if s.prober == nil {
		dctx, cancel := context.WithTimeout(ctx, sideDialTimeout)
		pr, err := s.dial(dctx)
		cancel()
		if err != nil {
			return math.Inf(1)
		}
		s.mu.Lock()
		s.prober = pr
		s.mu.Unlock()
	}
	return s.prober.Probe(ctx, p)
}

// Bytes is what the side connections have cost so far (0 before the
// first probe dialled them).
func (s *sideProbes) Bytes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prober == nil {
		return 0
	}
	return s.prober.Bytes()
}

// close stops the goroutine and closes the side connections.
func (s *sideProbes) close() error {
	s.cancel()
	<-s.done
	if s.prober == nil {
		return nil
	}
	return s.prober.Close()
}
