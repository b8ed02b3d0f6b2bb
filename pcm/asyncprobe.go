package pcm

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// AsyncProber runs side probes (SideProber) on goroutines of its own, so
// that a probe never delays a request: Ask asks for a path to be probed,
// Ready says that an answer came back, and Answers hands out the answers
// that came back since it was last called. The probes of different paths
// run at once (up to maxProbesAtOnce), so that the start-up sweep
// (pathsel.ProbeSchedule) learns every path's round trip within about one
// of them, and a slow or lost probe delays no other path's. The side
// prober is made on the first probe, on its goroutine too. It is the one
// probe engine of the library: a Client's Config.Probes and the experiment
// runner's real mode both run on it.
type AsyncProber struct {
	dial   func(context.Context) (*SideProber, error)
	ask    chan int
	ready  chan struct{} // one token: an answer came back since
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	answers []ProbeAnswer // came back, not handed out yet
	pending []bool        // a probe of the path is asked or under way
	prober  *SideProber   // set by loop's goroutine
}

// ProbeAnswer is one probe's answer: path Path measured RTTms (+Inf: lost
// or timed out). Err is set when the probe target itself failed
// (ErrProbeTarget): the server answered, but not with a success.
type ProbeAnswer struct {
	Path  int
	RTTms float64
	Err   error
}

// sideDialTimeout bounds dialling the side connections (a handshake per
// path); a dial that fails or takes longer measures +Inf and is tried again
// at the next probe.
const sideDialTimeout = 10 * time.Second

// maxProbesAtOnce bounds the probes under way at once, and so the side
// connections open at once (each probe holds its path's until answered;
// the working set closes the rest after): the start-up sweep asks every
// idle path at once. 16 is the most paths the default is tested on
// (pathsel's generated stationary sets); a client with more paths sweeps
// the rest as the first ones answer.
const maxProbesAtOnce = 16

// NewAsyncProber starts the probe goroutine for k paths; dial makes the
// side prober on the first probe. Close ends it.
func NewAsyncProber(k int, dial func(context.Context) (*SideProber, error)) *AsyncProber {
	ctx, cancel := context.WithCancel(context.Background())
	s := &AsyncProber{dial: dial, ask: make(chan int, k), ready: make(chan struct{}, 1), cancel: cancel,
		done: make(chan struct{}), pending: make([]bool, k)}
	go s.loop(ctx)
	return s
}

// Ask asks for a probe of path p, unless one is already asked or under
// way, and says whether it asked; the answer comes through Answers.
func (s *AsyncProber) Ask(p int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p < 0 || p >= len(s.pending) || s.pending[p] {
		return false
	}
	s.pending[p] = true
	s.ask <- p // room for every path: never blocks
	return true
}

// Ready receives when an answer came back since Answers was last called
// (at least once for any number of answers).
func (s *AsyncProber) Ready() <-chan struct{} { return s.ready }

// Answers hands out the answers that came back since the last call.
func (s *AsyncProber) Answers() []ProbeAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers
	s.answers = nil
	return a
}

func (s *AsyncProber) loop(ctx context.Context) {
	var probes sync.WaitGroup
	defer close(s.done)
	defer probes.Wait()
	slots := make(chan struct{}, maxProbesAtOnce)
	for {
		var p int
		select {
		case <-ctx.Done():
			return
		case p = <-s.ask:
		}
		if !s.dialled(ctx) {
			s.answer(p, math.Inf(1), nil)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		probes.Go(func() {
			v, err := s.prober.ProbeErr(ctx, p)
			<-slots
			if !errors.Is(err, ErrProbeTarget) {
				err = nil
			}
			s.answer(p, v, err)
		})
	}
}

// dialled makes the side prober if it is not made yet and says whether
// it is; a failed dial is tried again at the next probe.
func (s *AsyncProber) dialled(ctx context.Context) bool {
	if s.prober != nil {
		return true
	}
	dctx, cancel := context.WithTimeout(ctx, sideDialTimeout)
	pr, err := s.dial(dctx)
	cancel()
	if err != nil {
		return false
	}
	s.mu.Lock()
	s.prober = pr
	s.mu.Unlock()
	return true
}

// answer records path p's answer and says so through Ready.
func (s *AsyncProber) answer(p int, v float64, err error) {
	s.mu.Lock()
	s.answers = append(s.answers, ProbeAnswer{Path: p, RTTms: v, Err: err})
	s.pending[p] = false
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Bytes is what the side connections have cost so far (0 before the
// first probe dialled them).
func (s *AsyncProber) Bytes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prober == nil {
		return 0
	}
	return s.prober.Bytes()
}

// Close stops the goroutine and closes the side connections.
func (s *AsyncProber) Close() error {
	s.cancel()
	<-s.done
	if s.prober == nil {
		return nil
	}
	return s.prober.Close()
}
