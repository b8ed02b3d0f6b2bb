package pcm

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// AsyncProber runs side probes (SideProber) on a goroutine of its own, so
// that a probe never delays a request: Ask asks for a path to be probed,
// and Answers hands out the answers that came back since it was last
// called. The side connections are dialled on the first probe, on that
// goroutine too. It is the one probe engine of the library: a Client's
// Config.Probes and the experiment runner's real mode both run on it.
type AsyncProber struct {
	dial   func(context.Context) (*SideProber, error)
	ask    chan int
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

// NewAsyncProber starts the probe goroutine for k paths; dial makes the
// side prober on the first probe. Close ends it.
func NewAsyncProber(k int, dial func(context.Context) (*SideProber, error)) *AsyncProber {
	ctx, cancel := context.WithCancel(context.Background())
	s := &AsyncProber{dial: dial, ask: make(chan int, k), cancel: cancel, done: make(chan struct{}), pending: make([]bool, k)}
	go s.loop(ctx)
	return s
}

// Ask asks for a probe of path p, unless one is already asked or under
// way; its answer comes through Answers.
func (s *AsyncProber) Ask(p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p >= 0 && p < len(s.pending) && !s.pending[p] {
		s.pending[p] = true
		s.ask <- p // room for every path: never blocks
	}
}

// Answers hands out the answers that came back since the last call.
func (s *AsyncProber) Answers() []ProbeAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers
	s.answers = nil
	return a
}

func (s *AsyncProber) loop(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.ask:
			v, err := s.probe(ctx, p)
			s.mu.Lock()
			s.answers = append(s.answers, ProbeAnswer{Path: p, RTTms: v, Err: err})
			s.pending[p] = false
			s.mu.Unlock()
		}
	}
}

// probe measures path p, dialling the side connections first if need be;
// a failed dial measures +Inf (and is tried again at the next probe).
func (s *AsyncProber) probe(ctx context.Context, p int) (float64, error) {
	if s.prober == nil {
		dctx, cancel := context.WithTimeout(ctx, sideDialTimeout)
		pr, err := s.dial(dctx)
		cancel()
		if err != nil {
			return math.Inf(1), nil
		}
		s.mu.Lock()
		s.prober = pr
		s.mu.Unlock()
	}
	v, err := s.prober.ProbeErr(ctx, p)
	if errors.Is(err, ErrProbeTarget) {
		return v, err
	}
	return v, nil
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
