package realenv

import (
	"context"
	"math"
	"time"

	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/runner"
)

// sideProbes is the run's out-of-band probes of idle paths: the library's
// probe engine (pcm.AsyncProber, as Config.Probes runs it), with the
// answers in the runner's terms. A probe never delays a request: Probe
// asks, and Answers hands out what came back since it was last called.
type sideProbes struct{ *pcm.AsyncProber }

// probeTimeout bounds one probe: a path whose probe takes longer is read
// as lost (the path may be down).
const probeTimeout = time.Second

func newSideProbes(k int, dial func(context.Context) (*pcm.SideProber, error)) *sideProbes {
	return &sideProbes{pcm.NewAsyncProber(k, dial)}
}

// Probe asks for a probe of path p (pcm.AsyncProber.Ask).
func (s *sideProbes) Probe(p pathsel.PathID) { s.Ask(int(p)) }

// Answers hands out the answers that came back since the last call; a
// probe whose target failed measures +Inf, as a lost one.
func (s *sideProbes) Answers() []runner.ProbeAnswer {
	var out []runner.ProbeAnswer
	for _, a := range s.AsyncProber.Answers() {
		v := a.RTTms
		if a.Err != nil {
			v = math.Inf(1)
		}
		out = append(out, runner.ProbeAnswer{P: pathsel.PathID(a.Path), RTTms: v})
	}
	return out
}

// close stops the goroutine and closes the side connections.
func (s *sideProbes) close() error { return s.Close() }
