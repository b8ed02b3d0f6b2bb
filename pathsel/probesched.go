package pathsel

// Side probes of idle paths: the library's defaults (pcm's Config.Probes
// takes them from here) and the schedule that the experiment runner's
// probe budget and the stationary tests' model follow. pcm.Client runs its
// steady part (a tick every 1000/PerSecond ms, the next idle path in turn)
// but not yet the start-up sweep: without first tries of every path, a
// failover can land on a path the connection never validated
// (docs/pcm-default.md, "Probes", item 8). pathsel has no clock: the
// caller tells a ProbeSchedule the time on its own.
const (
	// DefaultProbesPerSecond: two a second keep every idle path of a
	// three-path client sampled each second — fast enough to notice an
	// idle path that improved within a few seconds — for about the bytes
	// pcm/RESULTS.md measures.
	DefaultProbesPerSecond = 2
	// DefaultProbeWorkingSet: three side connections, as many as quic-go
	// tracks client paths besides the active one, so the experiment
	// runner's model of probe cost and the library's agree.
	DefaultProbeWorkingSet = 3
	// DefaultProbeTimeoutMs bounds one probe: a slower one measures +Inf.
	DefaultProbeTimeoutMs = 1000
)

// ProbeSchedule says when a side probe is sent and to which idle path:
//
//   - at the start, every idle path at once (Sweep): the selector learns
//     every path's round trip within about one of them, before it has
//     spent a request on each (with many paths, one try of each is most of
//     the default's regret on a stationary set, and a probe tells which
//     tries cannot pay);
//   - then a tick every 1000/PerSecond ms (Due), each asking for the next
//     idle path in turn (Next).
//
// A caller that asks a probe tells its selector (ProbeObserver.ProbeUnderWay)
// and hands the answer over as soon as it comes back. A ProbeSchedule is
// not safe for concurrent use.
type ProbeSchedule struct {
	everyMs float64 // between ticks
	nextMs  float64 // the time of the next tick
	turn    int     // the next path in turn
}

// NewProbeSchedule returns the schedule of perSecond (> 0) probes a second
// after the sweep; the first tick falls one period after the start.
func NewProbeSchedule(perSecond float64) *ProbeSchedule {
	every := 1000 / perSecond
	return &ProbeSchedule{everyMs: every, nextMs: every}
}

// EveryMs is the period of the ticks in ms.
func (s *ProbeSchedule) EveryMs() float64 { return s.everyMs }

// Sweep is the start-up sweep: every path of the k whose idle(i) is true.
func (s *ProbeSchedule) Sweep(k int, idle func(int) bool) []int {
	var out []int
	for i := range k {
		if idle(i) {
			out = append(out, i)
		}
	}
	return out
}

// Due says whether a tick fell due by nowMs (ms since the start) and, if
// so, returns its time and moves past it; a caller behind by several ticks
// calls it until false.
func (s *ProbeSchedule) Due(nowMs float64) (tickMs float64, ok bool) {
	if s.nextMs > nowMs {
		return 0, false
	}
	tickMs = s.nextMs
	s.nextMs += s.everyMs
	return tickMs, true
}

// Skip moves the next tick one period later: a caller whose probe took
// the slot of the next one (the experiment runner's model of a path
// opened again beyond the working set) skips it.
func (s *ProbeSchedule) Skip() { s.nextMs += s.everyMs }

// Next is the next path in turn of the k whose idle(i) is true, or −1
// when none is.
func (s *ProbeSchedule) Next(k int, idle func(int) bool) int {
	for range k {
		q := s.turn % k
		s.turn = q + 1
		if idle(q) {
			return q
		}
	}
	return -1
}
