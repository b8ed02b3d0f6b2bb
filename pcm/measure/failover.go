package measure

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hetquic/hetquic/origin"
)

// Failover is one trial of the failover measurement.
type Failover struct {
	RTTms float64 `json:"rtt_ms"`
	// ResumeMs is the longest pause in the response after the active path
	// was cut: stall detection, the switch, and the re-request's round
	// trip, until bytes flow again over the other path.
	ResumeMs float64 `json:"resume_ms"`
	// Intact says the body was complete and every byte right.
	Intact bool `json:"intact"`
}

// MeasureFailover downloads `trials` times an 8 MiB object over two
// identical emulated paths of the given RTT and cuts the active path (an
// outage in the emulator) after the first MiB, with the stall timeout of
// pcm's default.
func MeasureFailover(ctx context.Context, rtt float64, trials int) ([]Failover, error) {
	var out []Failover
	for range trials {
		f, err := failoverTrial(ctx, rtt)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func failoverTrial(ctx context.Context, rtt float64) (Failover, error) {
	b, c, closeAll, err := dialTwin(ctx, "failover", rtt, false)
	if err != nil {
		return Failover{}, err
	}
	defer closeAll()
	for _, p := range []int{1, 0} { // validate b, come back to a
		if _, err := c.GetOn(ctx, p, "/bytes/1000", nil); err != nil {
			return Failover{}, err
		}
	}
	const size = 8 << 20
	w := &cutWatch{after: 1 << 20, cut: func() { b.relay.Engine().Outage("a", time.Minute) }}
	res, err := c.GetOn(ctx, 0, "/bytes/"+strconv.Itoa(size), w)
	if err != nil {
		return Failover{}, err
	}
	if res.Failovers == 0 {
		return Failover{}, fmt.Errorf("the outage caused no failover")
	}
	return Failover{RTTms: rtt, ResumeMs: float64(w.maxGap) / float64(time.Millisecond), Intact: w.intact && w.n == size}, nil
}

// cutWatch checks the body as it arrives, cuts the path once `after` bytes
// are in, and notes the longest pause between writes after the cut (before
// it, bytes flow every few ms).
type cutWatch struct {
	mu       sync.Mutex
	n, after int64
	cut      func()
	cutDone  bool
	last     time.Time
	maxGap   time.Duration
	bad      bool
	intact   bool
}

func (w *cutWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if w.cutDone {
		w.maxGap = max(w.maxGap, now.Sub(w.last))
	}
	w.last = now
	for i, x := range b {
		if x != origin.PatternByte(w.n+int64(i)) {
			w.bad = true
		}
	}
	w.n += int64(len(b))
	w.intact = !w.bad
	if !w.cutDone && w.n >= w.after {
		w.cutDone = true
		w.cut()
	}
	return len(b), nil
}
