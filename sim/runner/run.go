package runner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/scenario"
	"github.com/hetquic/hetquic/sim"
	"github.com/hetquic/hetquic/sim/topo"
)

// FlowResult is one flow of a run.
type FlowResult struct {
	Src, Dst string
	Paths    []string // path names (scenario) or node sequences (topology)
	StartS   float64
	FCTS     float64 // −1: did not complete
	Bytes    int64
}

// RunResult is what one (variant, path count, seed) run measured.
type RunResult struct {
	Label     string
	Variant   int
	Paths     int // scenario paths used (0 on a topology)
	Seed      uint64
	Completed bool    // every flow finished before duration_s
	EndS      float64 // virtual time at the end
	// GoodputMbps is application bytes delivered in order over the time
	// from the first flow's start to the last delivery.
	GoodputMbps float64
	Bins        []float64 // goodput per bin (Mbit/s), all flows together
	Flows       []FlowResult
	// Per chunk delivered in order: delivery delay (first transmission →
	// in-order delivery) and reordering delay (arrival → delivery), ms —
	// while the run keeps them (delays.go: at most exactChunks, or every
	// one with exact_chunk_delays); past that, DelaySketch holds the
	// delivery delays (an encoded DDSketch) and both slices are empty.
	DelayMs, ReorderMs []float32
	DelaySketch        []byte
	Chunks             int     // chunks delivered in order
	ReorderSumMs       float64 // the sum of every chunk's reordering delay
	SentPkts, LostPkts uint64  // sender view (declared lost)
	Drops              uint64  // links: queue + random + outage drops
	SegmentsMissed     int     // dash: segments completed after their deadline (or never)
	Segments           int
	// Workloads with streams (streams, video, reqresp, cbr): per stream,
	// completion time from opening (a frame's delay, a response's time
	// from its request) in ms; deadlines decided and missed (video); and
	// per chunk the application delay (write → delivery, ms).
	StreamMs          []float32
	Deadlines, Missed int
	AppDelayMs        []float32
	Events            uint64
	WallS             float64
	LEO               *LEOResult // LEO specs only
	// Handovers is, for a drive (mobility specs), how many handover
	// outages began before the transfer's last delivery: a claim about
	// handling handovers needs a transfer that meets one.
	Handovers int
}

// job is one run to do.
type job struct {
	variant, paths int
	seed           uint64
}

// Jobs lists the runs of s in a fixed order: variant, path count, seed.
func (s *Spec) jobs() []job {
	counts := s.PathCounts
	if len(counts) == 0 {
		counts = []int{0}
	}
	var out []job
	for v := range s.Variants {
		for _, n := range counts {
			for k := 0; k < s.Seeds; k++ {
				out = append(out, job{v, n, s.Seed + uint64(k)})
			}
		}
	}
	return out
}

// Result is every run of an experiment, in Jobs order.
type Result struct {
	Spec *Spec
	Runs []*RunResult
}

// Run executes every run of s on the worker pool (workers goroutines)
// (≤ 0: all cores); the first failing run cancels the others. The results
// do not depend on the number of workers. progress, when not nil, gets one
// line per finished run.
func Run(ctx context.Context, s *Spec, workers int, progress io.Writer) (*Result, error) {
	p := &Plan{Name: s.Name, Set: sweep.Single(s, planLoader)}
	runs, err := RunShard(ctx, p, sweep.All, workers, progress)
	if err != nil {
		return nil, err
	}
	res, err := Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

func pathsTag(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d paths)", n)
}

// connConfig is the transport configuration for variant v.
func (s *Spec) connConfig(v Variant, flow int) sim.ConnConfig {
	t := s.Transport
	if v.StreamWindowBytes != 0 {
		t.StreamWindowBytes = v.StreamWindowBytes
	}
	return sim.ConnConfig{Flow: flow, PacketBytes: t.PacketBytes, RecvWindow: t.RecvWindowBytes, StreamWindow: t.StreamWindowBytes, AckEvery: t.AckEvery,
		AckOnFastest: t.AckOnFastest, AutoTune: t.AutoTune, CC: v.CC, Scheduler: v.Scheduler}
}

// recorder collects what a run measures.
type recorder struct {
	r      *RunResult
	delays delayRecorder
	app    bool // record application delays (application-limited sources)
	bin    time.Duration
	bytes  int64
	first  time.Duration
	last   time.Duration
}

func (rc *recorder) deliver(d sim.Delivery, payload int) {
	b := int(d.At / rc.bin)
	for len(rc.r.Bins) <= b {
		rc.r.Bins = append(rc.r.Bins, 0)
	}
	rc.r.Bins[b] += float64(payload)
	rc.bytes += int64(payload)
	rc.last = d.At
	rc.delays.add(rc.r, float32(d.Delay.Seconds()*1e3), float32(d.Reorder.Seconds()*1e3))
	if rc.app {
		rc.r.AppDelayMs = append(rc.r.AppDelayMs, float32(d.AppDelay.Seconds()*1e3))
	}
}

// stream records a stream event of a workload with streams.
func (rc *recorder) stream(e sim.StreamEvent) {
	switch e.Kind {
	case sim.StreamDelivered:
		rc.r.StreamMs = append(rc.r.StreamMs, float32(e.Delay().Seconds()*1e3))
		if e.Deadline > 0 && !e.Late {
			rc.r.Deadlines++
		}
	case sim.StreamMissed:
		rc.r.Deadlines++
		rc.r.Missed++
	}
}

func (rc *recorder) finish(s *sim.Sim, conns []*sim.Conn, links []*sim.Link) {
	r := rc.r
	for i := range r.Bins {
		r.Bins[i] = r.Bins[i] * 8 / rc.bin.Seconds() / 1e6
	}
	if span := (rc.last - rc.first).Seconds(); span > 0 {
		r.GoodputMbps = float64(rc.bytes) * 8 / span / 1e6
	}
	for _, c := range conns {
		for _, ps := range c.PathStats() {
			r.SentPkts += ps.Sent
			r.LostPkts += ps.Lost
		}
	}
	for _, l := range links {
		r.Drops += l.Stats.QueueDrops + l.Stats.LossDrops + l.Stats.OutageDrops
	}
	r.EndS = s.Now().Seconds()
	r.Events = s.Events()
}

// RunOne runs variant v with n scenario paths (0: all) and seed.
func (s *Spec) RunOne(ctx context.Context, v, n int, seed uint64) (*RunResult, error) {
	start := time.Now() // wall time for the report only; never a seed
	va := s.Variants[v]
	r := &RunResult{Label: va.Label, Variant: v, Paths: n, Seed: seed}
	rc := &recorder{r: r, bin: time.Duration(s.BinMs * float64(time.Millisecond)), delays: delayRecorder{keepAll: s.ExactChunkDelays}}
	sm := sim.New(seed)
	sm.StopOn(ctx)
	var err error
	if s.tp != nil {
		err = s.runTopology(ctx, sm, va, rc)
	} else if s.LEO != nil {
		err = s.runLEO(ctx, sm, va, rc)
	} else {
		err = s.runScenario(ctx, sm, va, n, seed, rc)
	}
	if err != nil {
		return nil, err
	}
	rc.delays.finish(r)
	if s.Mobility != nil && s.sc != nil {
		r.Handovers = handoversBefore(s.sc.Events, rc.last.Seconds())
	}
	r.WallS = time.Since(start).Seconds()
	return r, nil
}

// scenarioFor is the scenario run seed seed meets: a fading drive's own
// draw of fades (mobility.Drive.ForRun), else the one loaded scenario.
// Fading leaves handovers, which decide on the mean RSS, where s.sc has
// them.
func (s *Spec) scenarioFor(seed uint64) (*scenario.Scenario, error) {
	if s.Mobility == nil || !s.Mobility.Fades() {
		return s.sc, nil
	}
	sc, err := s.Mobility.ForRun(seed).Scenario(s.Name)
	if err != nil {
		return nil, fmt.Errorf("mobility: %w", err)
	}
	return sc, nil
}

// handoversBefore counts the outages (a drive's handovers) that begin
// before t seconds.
func handoversBefore(events []scenario.Event, t float64) int {
	n := 0
	for _, e := range events {
		if e.OutageS > 0 && e.AtS < t {
			n++
		}
	}
	return n
}

func (s *Spec) runScenario(ctx context.Context, sm *sim.Sim, va Variant, n int, seed uint64, rc *recorder) error {
	sc, err := s.scenarioFor(seed)
	if err != nil {
		return err
	}
	net, err := sim.NewHostNet(sm, sc)
	if err != nil {
		return err
	}
	paths := net.Paths(s.Direction == "down")
	if n > 0 {
		paths = paths[:n]
	}
	conn, err := sim.NewConn(sm, s.connConfig(va, 0), paths)
	if err != nil {
		return err
	}
	fr := FlowResult{Src: "server", Dst: "client", FCTS: -1}
	if s.Direction == "up" {
		fr.Src, fr.Dst = fr.Dst, fr.Src
	}
	for _, p := range paths {
		fr.Paths = append(fr.Paths, p.Name)
	}
	s.startApp(sm, conn, &fr, 0, rc, func() { sm.Stop() })
	sm.Run(time.Duration(s.DurationS*float64(time.Second)), 0, nil)
	rc.r.Flows = []FlowResult{fr}
	rc.r.Completed = fr.FCTS >= 0
	rc.finish(sm, []*sim.Conn{conn}, net.Links())
	return ctx.Err()
}

// startApp drives conn with the spec's application from start on and calls
// done when the flow completes.
func (s *Spec) startApp(sm *sim.Sim, conn *sim.Conn, fr *FlowResult, start time.Duration, rc *recorder, done func()) {
	fr.StartS = start.Seconds()
	payload := conn.Payload()
	a := s.App
	switch a.Kind {
	case "bulk":
		bytes := int64(a.SizeMB * 1e6)
		fr.Bytes = bytes
		conn.Receiver().OnDeliver = func(d sim.Delivery) {
			rc.deliver(d, payload)
			if d.Chunk == conn.Written()-1 {
				fr.FCTS = (d.At - start).Seconds()
				done()
			}
		}
		sm.At(start, func() { conn.Write(bytes) })
	case "streams", "video", "cbr", "reqresp":
		s.startStreams(sm, conn, fr, start, rc, done)
	case "dash":
		seg := time.Duration(a.SegmentS * float64(time.Second))
		deadline := time.Duration(a.DeadlineS * float64(time.Second))
		segBytes := int64(a.BitrateMbps * 1e6 * a.SegmentS / 8)
		ends := make([]int, a.Segments) // last chunk of each segment
		got := 0
		rc.r.Segments += a.Segments
		rc.r.SegmentsMissed += a.Segments // decremented as segments make it
		k := 0
		conn.Receiver().OnDeliver = func(d sim.Delivery) {
			rc.deliver(d, payload)
			for k < got && d.Chunk >= ends[k] {
				if d.At <= start+time.Duration(k)*seg+deadline {
					rc.r.SegmentsMissed--
				}
				k++
				if k == a.Segments {
					fr.FCTS = (d.At - start).Seconds()
					done()
				}
			}
		}
		for i := 0; i < a.Segments; i++ {
			i := i
			sm.At(start+time.Duration(i)*seg, func() {
				ends[i] = conn.Write(segBytes) - 1
				got = i + 1
				fr.Bytes += segBytes
			})
		}
	}
}

func (s *Spec) runTopology(ctx context.Context, sm *sim.Sim, va Variant, rc *recorder) error {
	tp := s.tp
	fwd := make([]*sim.Link, len(tp.Links))
	rev := make([]*sim.Link, len(tp.Links))
	var all []*sim.Link
	avail := make([]float64, len(tp.Links))
	for i, l := range tp.Links {
		p := sim.LinkParams{Delay: time.Duration(l.DelayMs * float64(time.Millisecond)), RateBps: l.RateMbps * 1e6,
			Loss: l.Loss, QueuePkts: l.QueuePackets}
		fwd[i] = sim.NewLink(sm, l.A+">"+l.B, p)
		rev[i] = sim.NewLink(sm, l.B+">"+l.A, p)
		all = append(all, fwd[i], rev[i])
		avail[i] = l.RateMbps
	}
	route := func(p topo.Path) (there, back []*sim.Link) {
		for i := 0; i+1 < len(p); i++ {
			l := tp.LinkBetween(p[i], p[i+1])
			if tp.Links[l].A == tp.Nodes[p[i]] {
				there, back = append(there, fwd[l]), append(back, rev[l])
			} else {
				there, back = append(there, rev[l]), append(back, fwd[l])
			}
		}
		for i, j := 0, len(back)-1; i < j; i, j = i+1, j-1 {
			back[i], back[j] = back[j], back[i]
		}
		return there, back
	}
	f := s.Flows
	// The same flows for every variant of a seed: their own stream.
	pick := sm.Rand("flows")
	var conns []*sim.Conn
	results := make([]FlowResult, f.Count)
	left := f.Count
	var setupErr error
	for i := 0; i < f.Count; i++ {
		var a, b int
		if len(f.Pairs) > 0 {
			pr := f.Pairs[i%len(f.Pairs)]
			a, _ = tp.Node(pr[0])
			b, _ = tp.Node(pr[1])
		} else {
			a = pick.IntN(len(tp.Nodes))
			b = (a + 1 + pick.IntN(len(tp.Nodes)-1)) % len(tp.Nodes)
		}
		i, start := i, time.Duration(float64(i)*f.IntervalS*float64(time.Second))
		sm.At(start, func() {
			flow := topo.Flow{Src: a, Dst: b, BWMbps: f.BWMbps, MaxDelayMs: f.MaxDelayMs, MaxLoss: f.MaxLoss}
			cands, err := s.pathSet(va.Scheme, flow, avail)
			if err != nil {
				setupErr = fmt.Errorf("flow %d: %w", i, err)
				sm.Stop()
				return
			}
			var specs []sim.PathSpec
			fr := &results[i]
			*fr = FlowResult{Src: tp.Nodes[a], Dst: tp.Nodes[b], FCTS: -1}
			share := f.BWMbps / float64(len(cands))
			for _, c := range cands {
				there, back := route(c.Path)
				specs = append(specs, sim.PathSpec{Name: tp.String(c.Path), Fwd: there, Rev: back, Weight: c.Weight})
				fr.Paths = append(fr.Paths, tp.String(c.Path))
				for _, l := range tp.PathLinks(c.Path) {
					avail[l] -= share // Eq. 7: what the admitted flow holds
				}
			}
			conn, err := sim.NewConn(sm, s.connConfig(va, i), specs)
			if err != nil {
				setupErr = err
				sm.Stop()
				return
			}
			conns = append(conns, conn)
			s.startApp(sm, conn, fr, start, rc, func() {
				for _, c := range cands {
					for _, l := range tp.PathLinks(c.Path) {
						avail[l] += share
					}
				}
				if left--; left == 0 {
					sm.Stop()
				}
			})
		})
	}
	sm.Run(time.Duration(s.DurationS*float64(time.Second)), 0, nil)
	if setupErr != nil {
		return setupErr
	}
	rc.r.Flows = results
	rc.r.Completed = left == 0
	rc.finish(sm, conns, all)
	return ctx.Err()
}

// pathSet chooses a flow's paths by scheme (min-FCT §4 baselines).
func (s *Spec) pathSet(scheme string, f topo.Flow, avail []float64) ([]topo.Candidate, error) {
	tp, fl := s.tp, s.Flows
	switch scheme {
	case "minfct":
		return tp.SelectPathSet(f, avail, topo.MinFCTParams{K: fl.K, Candidates: fl.Candidates, Alpha: fl.Alpha, Beta: fl.Beta})
	case "quic", "lrf", "pquic":
		k := fl.K
		if scheme == "quic" {
			k = 1
		}
		paths := tp.KShortest(f.Src, f.Dst, k, tp.DelayWeight())
		if len(paths) == 0 {
			return nil, fmt.Errorf("no path from %s to %s", tp.Nodes[f.Src], tp.Nodes[f.Dst])
		}
		var out []topo.Candidate
		for _, p := range paths {
			out = append(out, topo.Candidate{Path: p, DelayMs: tp.DelayMs(p), Loss: tp.Loss(p)})
		}
		return out, nil
	}
	return nil, fmt.Errorf("scheme: unknown %q", scheme)
}
