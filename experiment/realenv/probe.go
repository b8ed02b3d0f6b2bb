package realenv

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
)

// sideProbes runs a run's out-of-band probes of idle paths on side
// connections (pcm.SideProber) on a goroutine of its own, so that a probe
// never delays a request: Probe asks for a path to be probed and returns
// that path's last answer not yet handed out, if any. The side
// connections are dialled on the first probe, on that goroutine too.
type sideProbes struct {
	dial    func(context.Context) (*pcm.SideProber, error)
	ask     chan int
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	answer  []float64 // per path: the last answer not handed out
	have    []bool
	pending []bool          // a probe of the path is asked or under way
	prober  *pcm.SideProber // set by loop's goroutine, under mu
}

// probeTimeout bounds one probe: a path whose probe takes longer is read
// as lost (the path may be down).
const probeTimeout = time.Second

func newSideProbes(k int, dial func(context.Context) (*pcm.SideProber, error)) *sideProbes {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sideProbes{
		dial: dial, ask: make(chan int, k), cancel: cancel, done: make(chan struct{}),
		answer: make([]float64, k), have: make([]bool, k), pending: make([]bool, k),
	}
	go s.loop(ctx)
	return s
}

// Probe asks for a probe of path p (unless one is already asked or under
// way) and returns p's last answer, once.
func (s *sideProbes) Probe(_ int, p pathsel.PathID) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pending[p] {
		s.pending[p] = true
		s.ask <- int(p) // room for every path: never blocks
	}
	v, ok := s.answer[p], s.have[p]
	s.have[p] = false
	return v, ok
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
			s.answer[p], s.have[p], s.pending[p] = v, true, false
			s.mu.Unlock()
		}
	}
}

// probe measures path p, dialling the side connections first if need be;
// a failed dial measures +Inf (and is tried again at the next probe).
func (s *sideProbes) probe(ctx context.Context, p int) float64 {
	if s.prober == nil {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
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
