package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/hetquic/hetquic/internal/linkmodel"
	"github.com/hetquic/hetquic/scenario"
)

// HostNet is a scenario's network in the simulator: two multi-homed hosts
// (client and server) joined by one access path per scenario path, each a
// pair of links (up: client → server, down: server → client). Scenario
// events change the links at their times.
type HostNet struct {
	Up, Down []*Link
	sc       *scenario.Scenario
	// timeline[i] lists the rates of path i after each event, for the
	// MMQUIC BDP forecast (the cross-layer database knows the schedule).
	timeline [][]ratePoint
}

type ratePoint struct {
	at       time.Duration
	up, down float64 // bit/s; 0 with outage set means no delivery
	outage   bool
}

// NewHostNet builds the links of sc and schedules its events.
func NewHostNet(s *Sim, sc *scenario.Scenario) (*HostNet, error) {
	h := &HostNet{sc: sc, timeline: make([][]ratePoint, len(sc.Paths))}
	tr := linkmodel.NewTraceFiles(sc.ReadFile) // the emulator's cache: unchanged traces keep their position
	cur := make([]scenario.Path, len(sc.Paths))
	copy(cur, sc.Paths)
	for i, p := range sc.Paths {
		up, err := linkmodel.FromScenario(p.Up, tr)
		if err != nil {
			return nil, fmt.Errorf("paths[%d].up: %w", i, err)
		}
		down, err := linkmodel.FromScenario(p.Down, tr)
		if err != nil {
			return nil, fmt.Errorf("paths[%d].down: %w", i, err)
		}
		// The emulator's streams for the same scenario and seed.
		h.Up = append(h.Up, newLink(s, p.Name+"/up", up, linkmodel.Rand(s.seed, p.Name, false)))
		h.Down = append(h.Down, newLink(s, p.Name+"/down", down, linkmodel.Rand(s.seed, p.Name, true)))
		h.timeline[i] = []ratePoint{{0, up.MeanRateBps(), down.MeanRateBps(), false}}
	}
	events := make([]scenario.Event, len(sc.Events))
	copy(events, sc.Events)
	sort.SliceStable(events, func(a, b int) bool { return events[a].AtS < events[b].AtS })
	for k, e := range events {
		i := sc.PathIndex(e.Path)
		at := time.Duration(e.AtS * float64(time.Second))
		if e.Set != nil {
			next, err := e.Set.Apply(cur[i])
			if err != nil {
				return nil, fmt.Errorf("events[%d].set.%w", k, err)
			}
			cur[i] = next
			up, err := linkmodel.FromScenario(next.Up, tr)
			if err != nil {
				return nil, fmt.Errorf("events[%d]: %w", k, err)
			}
			down, err := linkmodel.FromScenario(next.Down, tr)
			if err != nil {
				return nil, fmt.Errorf("events[%d]: %w", k, err)
			}
			s.At(at, func() { h.Up[i].SetParams(up); h.Down[i].SetParams(down) })
			h.timeline[i] = append(h.timeline[i], ratePoint{at, up.MeanRateBps(), down.MeanRateBps(), false})
			continue
		}
		d := time.Duration(e.OutageS * float64(time.Second))
		end := at + d
		s.At(at, func() { h.Up[i].Outage(d); h.Down[i].Outage(d) })
		last := h.timeline[i][len(h.timeline[i])-1]
		h.timeline[i] = append(h.timeline[i], ratePoint{at, 0, 0, true}, ratePoint{end, last.up, last.down, false})
	}
	for i := range h.timeline {
		sort.SliceStable(h.timeline[i], func(a, b int) bool { return h.timeline[i][a].at < h.timeline[i][b].at })
	}
	return h, nil
}

// rateAt is path i's rate in one direction at t (bit/s; 0: unlimited or outage).
func (h *HostNet) rateAt(i int, down bool, t time.Duration) float64 {
	tl := h.timeline[i]
	k := sort.Search(len(tl), func(k int) bool { return tl[k].at > t }) - 1
	if k < 0 {
		k = 0
	}
	if down {
		return tl[k].down
	}
	return tl[k].up
}

// Paths returns the connection paths for data flowing server → client
// (download, the default) or client → server (upload).
func (h *HostNet) Paths(download bool) []PathSpec {
	var out []PathSpec
	for i, p := range h.sc.Paths {
		fwd, rev := h.Down[i], h.Up[i]
		if !download {
			fwd, rev = rev, fwd
		}
		i := i
		out = append(out, PathSpec{Name: p.Name, Fwd: []*Link{fwd}, Rev: []*Link{rev},
			Forecast: func(now, dt time.Duration) float64 { return h.rateAt(i, download, now+dt) }})
	}
	return out
}

// Links returns every link (for loss statistics).
func (h *HostNet) Links() []*Link {
	return append(append([]*Link(nil), h.Up...), h.Down...)
}
