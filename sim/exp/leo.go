package exp

import (
	"context"
	"fmt"
	"math"
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
	// Recovery times (Fig. 3.11), ms: SS — from entering slow start (the
	// start, or a restart after persistent congestion) to leaving it; CA —
	// from a window reduction of more than 30 % to regaining the window
	// held before it. Sampled every 10 ms.
	RecoverySSMs, RecoveryCAMs []float64
	// CAUnrecovered counts CA recoveries cut short by another reduction or
	// by the end of the run (left out of RecoveryCAMs).
	CAUnrecovered int
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

// recoveryWatch samples one controller every 10 ms for the recovery times.
type recoveryWatch struct {
	ctl              cc.Controller
	inSS             bool
	ssStart          time.Duration
	prev             int
	caStart          time.Duration
	caTarget         int // 0: no CA recovery running
	ssTimes, caTimes *[]float64
	unrecovered      *int
}

func (w *recoveryWatch) sample(now time.Duration) {
	cw, ss := w.ctl.Window(), w.ctl.InSlowStart()
	switch {
	case ss && !w.inSS:
		w.inSS, w.ssStart = true, now
	case !ss && w.inSS:
		w.inSS = false
		*w.ssTimes = append(*w.ssTimes, float64(now-w.ssStart)/1e6)
	}
	if w.caTarget > 0 && cw >= w.caTarget {
		*w.caTimes = append(*w.caTimes, float64(now-w.caStart)/1e6)
		w.caTarget = 0
	}
	if !ss && cw < w.prev*7/10 { // a reduction by more than 30 %
		if w.caTarget == 0 {
			w.caTarget = w.prev
		} else {
			*w.unrecovered++ // cut again before it recovered
		}
		w.caStart = now
	}
	w.prev = cw
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
	watches := make([]*recoveryWatch, len(paths))
	for i := range paths {
		watches[i] = &recoveryWatch{ctl: conn.Controller(i), ssTimes: &lr.RecoverySSMs, caTimes: &lr.RecoveryCAMs, unrecovered: &lr.CAUnrecovered}
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
	sm.At(0, watch)
	rc.first = time.Duration(c.StartS * float64(time.Second))
	s.startApp(sm, conn, &fr, rc.first, rc, func() { sm.Stop() })
	sm.Run(until, time.Second, stopper(ctx, sm))
	for _, w := range watches {
		if w.caTarget > 0 {
			lr.CAUnrecovered++
		}
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
// the shared-satellite bins of runs (the bins' means); NaN without any.
func friendliness(runs []*RunResult) (mp, bg float64) {
	n := 0
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
		return math.NaN(), math.NaN()
	}
	return mp / float64(n), bg / float64(n)
}

// leoDescription is the report's network line for a LEO spec.
func (s *Spec) leoDescription() string {
	c := *s.LEO
	c.Defaults()
	return fmt.Sprintf("a LEO plane (sim/leo: %g km altitude, %g km/s, satellites %g km apart, %g km footprint, W %g MHz, handover outage %g ms, D_terr %g ms, channel loss %g, %d background NewReno flow(s) per satellite, MPQUIC from %g s, random phase %t; variants may override)",
		c.AltitudeKm, c.SpeedKmS, c.SpacingKm, c.FootprintKm, c.BandwidthMHz, c.HandoverMs, c.TerrestrialMs, c.Loss, c.Background, c.StartS, c.RandomPhase)
}
