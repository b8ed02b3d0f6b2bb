package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/hetquic/hetquic/sim"
	"github.com/hetquic/hetquic/sim/cc"
	"github.com/hetquic/hetquic/sim/leo"
)

// LEO runs (a spec with `leo:`, thesis ch. 3 / MACO) also record these.
type LEOResult struct {
	// Cwnd is each MPQUIC path's congestion window at the end of each bin,
	// in packets (thesis Fig. 3.8; for BBR its cwnd, the cwnd_gain·BDP cap:
	// its pacing gain is in the pacing rate, see sim/cc/bbr.go).
	Cwnd [][]float32
	// Signals sums the MPQUIC paths' congestion signals (§3.6.3).
	Signals cc.Signals
	// SharedBins marks the bins fully in state s3 (both subflows on one
	// satellite); BgBins is the goodput (Mbit/s) of the background TCP
	// flows on that satellite in those bins (0 elsewhere).
	SharedBins []bool
	BgBins     []float64
	// Recovery times (Fig. 3.11), ms: "from the moment that the subflow
	// enters a specific phase (i.e., SS or CA) until the moment that the
	// cwnd reaches the path BDP" (§3.6.3). A subflow enters SS at the
	// transfer's start (CA if it starts above its SST) and when a restart
	// (persistent congestion) puts it back in slow start, and CA when it
	// leaves slow start or cuts its window (by more than a quarter) in CA. The path BDP is the subflow's
	// equal share of its satellite link's C·D: Eq. 3.3's capacity times
	// Eq. 3.11's D, over the flows on that satellite (background TCP flows
	// and the connection's subflows there): "the available bottleneck
	// bandwidth of the tagged flow" of §3.4.1's BDP definition. A phase
	// entered at or above that BDP counts 0. Windows are sampled every
	// 10 ms from the transfer's start.
	RecoverySSMs, RecoveryCAMs []float64
	// SSUnrecovered and CAUnrecovered count the phases left (by the next
	// phase entry) or still running at the end of the run without the
	// window reaching the path BDP (not in RecoverySSMs/RecoveryCAMs).
	SSUnrecovered, CAUnrecovered int
}

// leoSpec is the constellation of variant va: the spec's, with the
// variant's non-zero fields over it.
func (s *Spec) leoSpec(va Variant) *leo.Constellation {
	c := *s.LEO
	if o := va.LEO; o != nil {
		mergeLEO(&c, o)
	}
	c.Defaults()
	return &c
}

func mergeLEO(c, o *leo.Constellation) {
	f := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	f(&c.AltitudeKm, o.AltitudeKm)
	f(&c.SpeedKmS, o.SpeedKmS)
	f(&c.SpacingKm, o.SpacingKm)
	f(&c.FootprintKm, o.FootprintKm)
	f(&c.HysteresisKm, o.HysteresisKm)
	f(&c.HandoverMs, o.HandoverMs)
	f(&c.TerrestrialMs, o.TerrestrialMs)
	f(&c.PtDBm, o.PtDBm)
	f(&c.G1DBi, o.G1DBi)
	f(&c.G2DBi, o.G2DBi)
	f(&c.LambdaM, o.LambdaM)
	f(&c.N0WHz, o.N0WHz)
	f(&c.Eta, o.Eta)
	f(&c.BandwidthMHz, o.BandwidthMHz)
	f(&c.Loss, o.Loss)
	f(&c.StepMs, o.StepMs)
	f(&c.StartS, o.StartS)
	c.RandomPhase = c.RandomPhase || o.RandomPhase
	if o.QueuePackets != 0 {
		c.QueuePackets = o.QueuePackets
	}
	if o.Background != 0 {
		c.Background = o.Background
	}
}

// recoveryWatch samples one controller every 10 ms for the recovery times
// (see LEOResult).
type recoveryWatch struct {
	ctl    cc.Controller
	target func(now time.Duration) float64 // the path BDP, bytes
	begun  bool                            // sampled before
	inSS   bool
	prev   int
	phase  int // 0: no recovery running, else phaseSS or phaseCA
	start  time.Duration
	lr     *LEOResult
}

const (
	phaseSS = 1 + iota
	phaseCA
)

func (w *recoveryWatch) sample(now time.Duration) {
	cw, ss := w.ctl.Window(), w.ctl.InSlowStart()
	switch {
	case ss && !w.inSS:
		w.enter(phaseSS, now)
	case !ss && (!w.begun || w.inSS || cw < w.prev*3/4):
		w.enter(phaseCA, now)
	}
	w.begun, w.inSS, w.prev = true, ss, cw
	if w.phase != 0 && float64(cw) >= w.target(now) {
		ms := float64(now-w.start) / 1e6
		if w.phase == phaseSS {
			w.lr.RecoverySSMs = append(w.lr.RecoverySSMs, ms)
		} else {
			w.lr.RecoveryCAMs = append(w.lr.RecoveryCAMs, ms)
		}
		w.phase = 0
	}
}

// enter starts a recovery in phase at now; one still running is counted
// unrecovered.
func (w *recoveryWatch) enter(phase int, now time.Duration) {
	w.end()
	w.phase, w.start = phase, now
}

// end counts a running recovery as unrecovered.
func (w *recoveryWatch) end() {
	switch w.phase {
	case phaseSS:
		w.lr.SSUnrecovered++
	case phaseCA:
		w.lr.CAUnrecovered++
	}
	w.phase = 0
}

func (s *Spec) runLEO(ctx context.Context, sm *sim.Sim, va Variant, rc *recorder) error {
	c := s.leoSpec(va)
	until := time.Duration(s.DurationS * float64(time.Second))
	net := leo.Build(sm, c, until)
	paths := net.Paths()
	conn, err := sim.NewConn(sm, s.connConfig(va, 0), paths)
	if err != nil {
		return err
	}
	fr := FlowResult{Src: "server", Dst: "client", FCTS: -1}
	for _, p := range paths {
		fr.Paths = append(fr.Paths, p.Name)
	}
	conns := []*sim.Conn{conn}
	lr := &LEOResult{Cwnd: make([][]float32, len(paths))}
	rc.r.LEO = lr
	bin := rc.bin
	// Background NewReno flows, per satellite slot (Fig. 3.6).
	bgBytes := [2]int64{}
	for slot := range 2 {
		for j := 0; j < c.Background; j++ {
			bc, err := sim.NewConn(sm, sim.ConnConfig{Flow: 1 + 2*j + slot, PacketBytes: s.Transport.PacketBytes,
				RecvWindow: s.Transport.RecvWindowBytes, StreamWindow: s.Transport.StreamWindowBytes, AckEvery: s.Transport.AckEvery, CC: "newreno", Scheduler: "single"},
				[]sim.PathSpec{net.BackgroundPath(slot)})
			if err != nil {
				return err
			}
			pay := int64(bc.Payload())
			bc.Receiver().OnDeliver = func(sim.Delivery) { bgBytes[slot] += pay }
			sm.At(0, func() { bc.Write(1 << 40) })
			conns = append(conns, bc)
		}
	}
	// Per bin: windows, and the background goodput on the shared satellite.
	var lastBg [2]int64
	var binTick func()
	binTick = func() {
		now := sm.Now()
		for i := range paths {
			lr.Cwnd[i] = append(lr.Cwnd[i], float32(float64(conn.Controller(i).Window())/float64(conn.Payload()+52)))
		}
		start := now - bin
		shared := net.SharedSlot(start) >= 0 && net.SharedSlot(start) == net.SharedSlot(now-1)
		lr.SharedBins = append(lr.SharedBins, shared)
		bg := 0.0
		if shared {
			slot := net.SharedSlot(now - 1)
			bg = float64(bgBytes[slot]-lastBg[slot]) * 8 / bin.Seconds() / 1e6
		}
		lr.BgBins = append(lr.BgBins, bg)
		lastBg = bgBytes
		if now+bin <= until {
			sm.After(bin, binTick)
		}
	}
	sm.At(bin, binTick)
	// Recovery times: the paths the scheduler uses, from the transfer's
	// start; a path's BDP share counts the flows on its satellite.
	used := len(paths)
	if va.Scheduler == "single" {
		used = 1
	}
	share := func(i int) func(time.Duration) float64 {
		return func(now time.Duration) float64 {
			bdp, slot := net.AccessBDP(i, now)
			flows := c.Background
			for j := range used {
				if _, s := net.AccessBDP(j, now); s == slot {
					flows++
				}
			}
			return bdp / float64(flows)
		}
	}
	var watches []*recoveryWatch
	for i := range used {
		watches = append(watches, &recoveryWatch{ctl: conn.Controller(i), target: share(i), lr: lr})
	}
	var watch func()
	watch = func() {
		for _, w := range watches {
			w.sample(sm.Now())
		}
		if sm.Now()+10*time.Millisecond <= until {
			sm.After(10*time.Millisecond, watch)
		}
	}
	rc.first = time.Duration(c.StartS * float64(time.Second))
	sm.At(rc.first, watch)
	s.startApp(sm, conn, &fr, rc.first, rc, func() { sm.Stop() })
	sm.Run(until, 0, nil)
	for _, w := range watches {
		w.end()
	}
	for i := range paths {
		if sc, ok := conn.Controller(i).(cc.SignalCounter); ok {
			g := sc.Signals()
			lr.Signals.LossEvents += g.LossEvents
			lr.Signals.Reductions += g.Reductions
		}
	}
	rc.r.Flows = []FlowResult{fr}
	rc.r.Completed = fr.FCTS >= 0
	// Only the MPQUIC connection's packets count in the loss rate.
	rc.finish(sm, []*sim.Conn{conn}, nil)
	rc.r.Drops = 0
	for _, l := range net.Links() {
		rc.r.Drops += l.Stats.QueueDrops + l.Stats.LossDrops + l.Stats.OutageDrops
	}
	return ctx.Err()
}

// friendliness is the MPQUIC aggregate over the background TCP goodput in
// the shared-satellite bins of runs (the bins' means) and how many bins
// that is; 0, 0, 0 without any.
func friendliness(runs []*RunResult) (mp, bg float64, n int) {
	for _, r := range runs {
		if r.LEO == nil {
			continue
		}
		for i, sh := range r.LEO.SharedBins {
			if !sh || i >= len(r.Bins) {
				continue
			}
			mp += r.Bins[i]
			bg += r.LEO.BgBins[i]
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0 // never shared (a short transfer): shared_bins says so
	}
	return mp / float64(n), bg / float64(n), n
}

// leoDescription is the report's network line for a LEO spec.
func (s *Spec) leoDescription() string {
	c := *s.LEO
	c.Defaults()
	return fmt.Sprintf("a LEO plane (sim/leo: %g km altitude, %g km/s, satellites %g km apart, %g km footprint, W %g MHz, handover outage %g ms, D_terr %g ms, channel loss %g, %d background NewReno flow(s) per satellite, MPQUIC from %g s, random phase %t; variants may override)",
		c.AltitudeKm, c.SpeedKmS, c.SpacingKm, c.FootprintKm, c.BandwidthMHz, c.HandoverMs, c.TerrestrialMs, c.Loss, c.Background, c.StartS, c.RandomPhase)
}
