package layeredvideo

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hetquic/hetquic/fec"
	"github.com/hetquic/hetquic/peekaboo"
	"github.com/hetquic/hetquic/qcmab"
	"github.com/hetquic/hetquic/sim"
	"github.com/hetquic/hetquic/sim/sched"
)

// Video and transport constants of §4.5.1.
const (
	FrameInterval = 150 * time.Millisecond // ΔT: a frame displayed every 150 ms
	Deadline      = 150 * time.Millisecond // per BL packet
	// layerShare splits a representation's frame into BL, EL1, EL2. The
	// thesis gives three layers but not their sizes; 40/30/30 % keeps the
	// BL the largest single layer, as in SVC ladders.
	segmentFrames = 13 // DASH segment ≈ 2 s of 150 ms frames: the ABR decides per segment
	abrSafety     = 0.8
	goodputBin    = time.Second
)

var layerShare = [3]float64{0.4, 0.3, 0.3}

// Controller names.
const (
	QCMAB    = "qcmab"
	Peekaboo = "peekaboo"
	LEAP     = "leap"
	MinRTT   = "minrtt"
	// LEAPFECBBR is the ablation that stood for LEAP before LEAP was built
	// from its papers (leap.go): FEC at the thesis's fixed 30 % on every
	// layer of every frame, BBR on both paths, minRTT scheduling — the
	// thesis's one-line summary of LEAP, kept to show what the published
	// design's forecast and adaptive redundancy change.
	LEAPFECBBR = "leap-fec-bbr"
)

// Variant is one controller with its settings.
type Variant struct {
	Label      string
	Controller string       // qcmab, peekaboo, leap, leap-fec-bbr, minrtt
	Gamma      float64      // QC-MAB's Γ (0: 0.99); every controller's frames are scored with it
	Raw        bool         // QC-MAB without context refinement (Fig. 4.7)
	Policy     qcmab.Policy // QC-MAB's bandit ("": the thesis's UCB)
	Epsilon    float64      // QC-MAB: uniform exploration (1: the logging policy for replay)
	Thresholds qcmab.Thresholds
	Arms       []string // QC-MAB's allowed arms (nil: all)
}

// agentConfig is QC-MAB's configuration for the given network names.
func (v Variant) agentConfig(networks []string) qcmab.Config {
	cfg := qcmab.DefaultConfig(networks...)
	cfg.Gamma, cfg.Policy, cfg.Epsilon, cfg.Arms = cmpOr(v.Gamma, 0.99), v.Policy, v.Epsilon, v.Arms
	if v.Thresholds != (qcmab.Thresholds{}) {
		cfg.Thresholds = v.Thresholds
	}
	return cfg
}

// networks names the scenario's APs as QC-MAB's networks: ap0, ap1, …
func (sc Scenario) networks() []string {
	n := 2
	if sc.Kind == "lattice" && sc.APSpacingM > 0 {
		g := int(sc.AreaM/sc.APSpacingM) + 1
		n = g * g
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ap%d", i)
	}
	return out
}

// Result is one run's per-frame and per-packet outcome.
type Result struct {
	Frames, Interruptions int
	Quality               []float64 // per frame: representation index played (0 when interrupted)
	BLDelayMs             []float64 // per BL source packet, release → arrival or FEC recovery (+Inf: never)
	GoodputMbps           []float64 // decoded on-time video per goodputBin
	Reward                []float64 // per frame, Eq. 4.19 with the variant's Γ
	Packets               []int     // per frame: source packets sent up to and including it
	Log                   []qcmab.LogEntry
	Handovers             int
	FECFrames             int
	// Decisions and Untried count QC-MAB's slots and those that chose an
	// arm never tried in its context cell (forced exploration).
	Decisions, Untried int
}

// IR is the interruption ratio n₀/n_t (§4.5.1).
func (r *Result) IR() float64 { return float64(r.Interruptions) / float64(max(r.Frames, 1)) }

// layerRec follows one layer of one frame at the receiver.
type layerRec struct {
	k, n    int
	arrived []time.Duration // first arrival per stream offset (−1: not yet)
}

type frameRec struct {
	release time.Duration
	rep     int
	layers  [3]layerRec
	bytes   [3]int64
	ids     []int // its streams
}

// decodedAt is when the layer became decodable (k of n arrived), or −1.
func (l *layerRec) decodedAt() time.Duration {
	var at []time.Duration
	for _, a := range l.arrived {
		if a >= 0 {
			at = append(at, a)
		}
	}
	if len(at) < l.k {
		return -1
	}
	slices.Sort(at)
	return at[l.k-1]
}

// Run simulates one variant in one scenario with one seed. It stops with
// ctx's error, results discarded, once ctx ends (Ctrl-C inside a run).
func Run(ctx context.Context, sc Scenario, v Variant, seed uint64, keepLog bool) (*Result, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	if v.Gamma == 0 {
		v.Gamma = 0.99
	}
	if err := qcmab.ValidateGamma(v.Gamma); err != nil {
		return nil, err
	}
	s := sim.New(seed)
	s.StopOn(ctx)
	w := newWorld(s, sc)
	cfg := sim.ConnConfig{CC: "cubic", Scheduler: "minrtt", RecvWindow: 4 << 20}
	if v.Controller == LEAPFECBBR {
		cfg.CC = "bbr" // the ablation's bandwidth-aware CC (README)
	}
	c, err := sim.NewConn(s, cfg, w.paths)
	if err != nil {
		return nil, err
	}
	if sc.Background {
		if err := background(s, w, sc.Duration); err != nil {
			return nil, err
		}
	}
	r := &session{s: s, w: w, c: c, v: v, res: &Result{}, keepLog: keepLog, rng: s.Rand("svc/policy"), stream: map[int][2]int{}, index: map[int][]int{}}
	switch v.Controller {
	case QCMAB:
		if r.agent, err = qcmab.New(v.agentConfig(sc.networks())); err != nil {
			return nil, err
		}
		r.refiners = make([]qcmab.Refiner, len(w.aps))
		r.seenOWD = make([]float64, len(w.aps))
		r.seenLoss = make([]float64, len(w.aps))
		for i := range r.refiners {
			r.refiners[i].Raw = v.Raw
			r.seenOWD[i] = -1
		}
	case Peekaboo:
		pk, err := peekaboo.New(peekaboo.DefaultConfig(0, 1))
		if err != nil {
			return nil, err
		}
		ps := &peekSched{pk: pk, rng: r.rng, payload: c.Payload(), byChunk: map[int]pendingReward{}}
		c.SetScheduler(ps)
		c.OnChunkAcked = ps.acked
	case LEAP:
		r.leap = newLeap(len(w.paths), v.Gamma)
	case LEAPFECBBR, MinRTT:
	default:
		return nil, fmt.Errorf("video: unknown controller %q (qcmab, peekaboo, leap, leap-fec-bbr, minrtt)", v.Controller)
	}
	c.Receiver().OnArrive = r.arrive
	nFrames := int(sc.Duration / FrameInterval)
	r.res.GoodputMbps = make([]float64, int(math.Ceil(sc.Duration.Seconds()/goodputBin.Seconds()))+1)
	for f := range nFrames {
		s.At(time.Duration(f)*FrameInterval, func() { r.frame(f) })
	}
	s.At(time.Duration(nFrames)*FrameInterval, func() { r.finish(nFrames - 1) })
	s.Run(sc.Duration+2*time.Second, 0, nil)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.collect()
	return r.res, nil
}

type session struct {
	s       *sim.Sim
	w       *world
	c       *sim.Conn
	v       Variant
	res     *Result
	rng     *rand.Rand
	keepLog bool

	frames []frameRec
	stream map[int][2]int // stream id → frame, layer
	// index maps a pinned per-path stream's offsets to its layer's coded
	// packet numbers (LEAP); other streams' offsets are the numbers.
	index   map[int][]int
	rep     int
	segN    int     // ABR samples in this segment
	segInv  float64 // Σ 1/estimate (s/Mbit) over them
	packets int

	leap              *leapCtl
	agent             *qcmab.Agent
	refiners          []qcmab.Refiner
	seenOWD, seenLoss []float64
	slotBytes         float64 // arrived on the Wi-Fi path this slot
	slotOWD           float64
	slotOWDn          int
	lastCands         []qcmab.Candidate
	lastDec           qcmab.Decision
}

func (r *session) arrive(stream, off, path int, sent, at time.Duration) {
	fl, ok := r.stream[stream]
	if !ok {
		return
	}
	l := &r.frames[fl[0]].layers[fl[1]]
	if ix, ok := r.index[stream]; ok {
		off = ix[off]
	}
	if off < len(l.arrived) && l.arrived[off] < 0 {
		l.arrived[off] = at
	}
	if path == 0 {
		r.slotBytes += float64(r.c.Payload())
		r.slotOWD += (at - sent).Seconds() * 1e3
		r.slotOWDn++
	}
}

// frame is one display slot: score the previous frame, let the controller
// decide, send the next frame.
func (r *session) frame(f int) {
	now := r.s.Now()
	if f > 0 {
		r.finish(f - 1)
	}
	r.sampleRate()
	if f%segmentFrames == 0 && f > 0 {
		// DASH rate adaptation per segment: the highest rung below a safety
		// share of the transport's goodput estimate (Eq. 4.4, Σ w_p(1−ε_p)/
		// RTT_p, harmonic mean of the segment's per-frame samples), less
		// the share of ΔT the one-way delay eats (a frame must arrive
		// within its 150 ms). Frame download times would be a poor estimate
		// here: a frame of a few packets measures latency, not capacity.
		est := 0.0
		if r.segInv > 0 {
			est = float64(r.segN) / r.segInv
		}
		r.rep = 0
		for i, mbps := range Ladder {
			if mbps <= abrSafety*est {
				r.rep = i
			}
		}
		r.segN, r.segInv = 0, 0
	}
	fr := frameRec{release: now, rep: r.rep}
	frameBytes := Ladder[r.rep] * 1e6 / 8 * FrameInterval.Seconds()
	var ks [3]int
	for l := range 3 {
		fr.bytes[l] = int64(math.Ceil(frameBytes * layerShare[l]))
		ks[l] = int((fr.bytes[l] + int64(r.c.Payload()) - 1) / int64(r.c.Payload()))
		r.packets += ks[l]
	}
	blocks, paths := r.blocks(ks)
	coded := false
	for l, b := range blocks {
		fr.layers[l] = layerRec{k: b.K, n: b.N, arrived: make([]time.Duration, b.N)}
		for i := range fr.layers[l].arrived {
			fr.layers[l].arrived[i] = -1
		}
		coded = coded || b.N > b.K
	}
	if coded {
		r.res.FECFrames++
	}
	for l := range 3 {
		r.open(f, l, &fr, paths[l])
	}
	r.frames = append(r.frames, fr)
	r.res.Packets = append(r.res.Packets, r.packets)
}

// open sends layer l of frame f: one stream, or (LEAP) one stream per
// path pinned to it, carrying the coded packets paths assigns to it.
func (r *session) open(f, l int, fr *frameRec, paths []int) {
	o := sim.StreamOpts{Priority: l, Deadline: fr.release + Deadline, DropLate: true}
	groups := [][]int{nil}
	if paths != nil {
		groups = make([][]int, len(r.w.paths))
		for i, p := range paths {
			groups[p] = append(groups[p], i)
		}
	}
	for p, idx := range groups {
		n := len(idx)
		if paths == nil {
			n = fr.layers[l].n
		} else if n == 0 {
			continue
		}
		o.Pinned, o.Path = paths != nil, p
		st, err := r.c.OpenStream(int64(n)*int64(r.c.Payload()), o)
		if err != nil {
			panic(err) // options are valid by construction
		}
		r.stream[st.ID()] = [2]int{f, l}
		fr.ids = append(fr.ids, st.ID())
		if paths != nil {
			r.index[st.ID()] = idx
		}
	}
}

// blocks is the controller's decision for a frame whose layers have ks
// source packets: each layer's FEC block and, for LEAP, each coded
// packet's path. QC-MAB's arm and the ablation add the thesis's fixed 30 %
// redundancy (§4.5.1); LEAP sizes it per block (leap.go); the others send
// the source alone.
func (r *session) blocks(ks [3]int) ([3]fec.Block, [3][]int) {
	useFEC := false
	switch r.v.Controller {
	case QCMAB:
		useFEC = r.decide()
	case LEAP:
		r.handoff() // LEAP aggregates paths; it does not select networks (§4.5.2)
		return r.leap.plan(r.c, ks)
	case LEAPFECBBR:
		useFEC = true
		r.handoff()
	default:
		r.handoff()
	}
	var out [3]fec.Block
	for l, k := range ks {
		out[l] = fec.Block{K: k, N: k}
		if useFEC {
			var err error
			if out[l], err = fec.Plan(k, fec.Redundancy); err != nil {
				panic(err) // k ≤ 2.6 MB / 1448 B < 256 at the top rung: cannot happen
			}
		}
	}
	return out, [3][]int{}
}

// sampleRate adds one sample of the ABR's estimate: Eq. 4.4 in Mbit/s
// times (1 − OWD/ΔT) for the fastest path's OWD (SRTT/2).
func (r *session) sampleRate() {
	phi, owd := 0.0, math.Inf(1)
	for i := range 2 {
		pv := r.c.PathView(i)
		if !pv.HasRTT {
			continue
		}
		phi += float64(pv.Cwnd) * (1 - pv.LossRate) / pv.SRTT.Seconds() * 8 / 1e6
		owd = min(owd, pv.SRTT.Seconds()/2)
	}
	est := phi * max(0, 1-owd/FrameInterval.Seconds())
	if est > 0 {
		r.segN++
		r.segInv += 1 / est
	}
}

// handoff is what the baselines do: stay on the serving AP until its
// signal falls below the −90 dBm threshold, then take the strongest.
func (r *session) handoff() {
	if r.w.sc.Kind == "lattice" && r.w.rss(r.w.assoc) < handoffDBm {
		r.w.associate(r.w.strongest())
		r.res.Handovers++
	}
}

// decide is QC-MAB's slot: refine the serving AP's context from what the
// last slot measured, build every visible AP's context, choose an arm.
func (r *session) decide() bool {
	cur := r.w.assoc
	owd := r.seenOWD[cur]
	if r.slotOWDn > 0 {
		owd = r.slotOWD / float64(r.slotOWDn)
	}
	if owd < 0 {
		owd = r.w.aps[cur].wireMs // no sample yet: the backhaul's propagation
	}
	loss := r.c.PathView(0).LossRate
	ctx, err := r.refiners[cur].Observe(r.slotBytes, FrameInterval.Seconds(), owd, min(max(loss, 0), 1))
	if err != nil {
		panic(err) // samples are finite and in range by construction
	}
	if !r.v.Raw {
		// Eq. 4.8: b = min{C^N, C^A} — context dimension reduction.
		capA, _ := r.w.access(cur)
		ctx.BandwidthMbps = min(ctx.BandwidthMbps, capA/1e6)
	}
	r.seenOWD[cur], r.seenLoss[cur] = ctx.OWDms, ctx.Loss
	r.slotBytes, r.slotOWD, r.slotOWDn = 0, 0, 0
	var cands []qcmab.Candidate
	for _, i := range r.w.visible() {
		c := ctx
		if i != cur {
			// Not attached: the access capacity from its beacon (Eq. 4.7),
			// the delay and loss last seen through it, else the radio's
			// predicted loss and the serving path's delay.
			capA, perA := r.w.access(i)
			c = qcmab.Context{BandwidthMbps: capA / 1e6, OWDms: ctx.OWDms, Loss: perA}
			if r.seenOWD[i] >= 0 {
				c.OWDms, c.Loss = r.seenOWD[i], max(r.seenLoss[i], perA)
			}
		}
		cands = append(cands, qcmab.Candidate{Network: i, Ctx: c})
	}
	d, err := r.agent.Choose(cands, r.rng)
	if err != nil {
		panic(err) // the visible set is never empty
	}
	if d.Arm.Network != cur {
		r.w.associate(d.Arm.Network)
		r.res.Handovers++
	}
	r.lastCands, r.lastDec = cands, d
	r.res.Decisions++
	if d.Untried {
		r.res.Untried++
	}
	return d.SenderFEC
}

// finish scores frame f at its deadline (Eq. 4.19) and lets QC-MAB learn.
func (r *session) finish(f int) {
	if f < 0 || f >= len(r.frames) {
		return
	}
	fr := &r.frames[f]
	dl := fr.release + Deadline
	var onTime [3]int
	var ok [3]bool
	for l := range 3 {
		lr := &fr.layers[l]
		got := make([]bool, lr.n)
		for i, a := range lr.arrived {
			got[i] = a >= 0 && a <= dl
		}
		b := fec.Block{K: lr.k, N: lr.n}
		onTime[l], _ = b.Delivered(got) // lengths match by construction
		ok[l] = onTime[l] == lr.k
	}
	r.res.Frames++
	q := 0.0
	if !ok[0] {
		r.res.Interruptions++
	} else {
		rate := float64(fr.bytes[0])
		if ok[1] {
			rate += float64(fr.bytes[1])
			if ok[2] {
				rate += float64(fr.bytes[2])
			}
		}
		rate = rate * 8 / FrameInterval.Seconds() / 1e6
		for i, mbps := range Ladder {
			if mbps <= rate*1.0001 {
				q = float64(i)
			}
		}
	}
	r.res.Quality = append(r.res.Quality, q)
	delivered := 0.0
	for l := range 3 {
		delivered += float64(min(onTime[l]*r.c.Payload(), int(fr.bytes[l])))
	}
	bin := int(dl / goodputBin)
	if bin < len(r.res.GoodputMbps) {
		r.res.GoodputMbps[bin] += delivered * 8 / goodputBin.Seconds() / 1e6
	}
	rw, err := qcmab.Reward(qcmab.Frame{BL: fr.layers[0].k, EL: fr.layers[1].k + fr.layers[2].k,
		BLOnTime: onTime[0], ELOnTime: onTime[1] + onTime[2]}, r.v.Gamma)
	if err != nil {
		panic(err) // counts are consistent by construction
	}
	r.res.Reward = append(r.res.Reward, rw)
	for _, id := range fr.ids {
		delete(r.index, id)
	}
	if r.agent != nil {
		if err := r.agent.Learn(rw); err != nil {
			panic(err)
		}
		if r.keepLog {
			r.res.Log = append(r.res.Log, qcmab.LogEntry{Cands: r.lastCands, Arm: r.lastDec.Arm, Propensity: r.lastDec.Propensity, Reward: rw})
		}
	}
}

// collect turns the arrivals into BL packet delays once the run is over.
func (r *session) collect() {
	for _, fr := range r.frames {
		lr := fr.layers[0]
		dec := lr.decodedAt()
		for i := range lr.k {
			t := lr.arrived[i]
			if dec >= 0 && (t < 0 || dec < t) {
				t = dec
			}
			d := math.Inf(1)
			if t >= 0 {
				d = (t - fr.release).Seconds() * 1e3
			}
			r.res.BLDelayMs = append(r.res.BLDelayMs, d)
		}
	}
}

// background starts on/off TCP (NewReno) flows on each backbone row
// (§4.5.4): on and off periods exponential, their means summing to
// bgCycle and the on period's share the scenario's background load (equal
// 5 s means by default), each on period a bulk transfer far larger than
// it can finish.
func background(s *sim.Sim, w *world, until time.Duration) error {
	const bgCycle = 10 * time.Second
	load := cmp.Or(w.sc.BackgroundLoad, 0.5)
	onMean, offMean := load*float64(bgCycle), (1-load)*float64(bgCycle)
	rng := s.Rand("svc/background")
	for r := range 2 {
		rev := sim.NewLink(s, fmt.Sprintf("bg%d/ack", r), sim.LinkParams{Delay: 50 * time.Millisecond})
		c, err := sim.NewConn(s, sim.ConnConfig{Flow: 10 + r, CC: "newreno", Scheduler: "single"},
			[]sim.PathSpec{{Name: fmt.Sprintf("bg%d", r), Fwd: w.rows[r], Rev: []*sim.Link{rev}}})
		if err != nil {
			return err
		}
		t := time.Duration(rng.ExpFloat64() * offMean)
		for t < until {
			on := time.Duration(rng.ExpFloat64() * onMean)
			if err := (sim.CBR{RateBps: 2 * bbWiredMbps * 1e6, Bytes: 64 << 10, Start: t, Stop: t + on}).Run(c, nil); err != nil {
				return err
			}
			t += on + time.Duration(rng.ExpFloat64()*offMean)
		}
	}
	return nil
}

// peekSched runs Peekaboo as the connection's per-packet scheduler and
// feeds it the delayed reward on each decided packet's first ACK.
type peekSched struct {
	pk      *peekaboo.Scheduler
	rng     *rand.Rand
	payload int
	wait    pendingReward // a wait decision, rewarded with the fast path's next packet
	byChunk map[int]pendingReward
}

type pendingReward struct {
	t  peekaboo.Ticket
	at time.Duration
}

func (*peekSched) Name() string { return "peekaboo" }

// maxSendWindow caps the flow-control feature (MaxInt without flow control).
const maxSendWindow = 16 << 20

func (p *peekSched) Next(v *sched.View) sched.Decision {
	if v.Pending == 0 {
		return sched.Decision{Path: sched.Wait, Chunk: sched.Head}
	}
	ps := make([]peekaboo.Path, len(v.Paths))
	for i := range v.Paths {
		pv := &v.Paths[i]
		rtt := 0.0
		if pv.HasRTT {
			rtt = pv.SRTT.Seconds()
		}
		ps[i] = peekaboo.Path{ID: i, Cwnd: float64(pv.Cwnd), Inflight: float64(pv.InFlight),
			SendWindow: float64(min(v.SendWindow, maxSendWindow)), RTT: rtt, CanSend: pv.CanSend(v.PacketBytes)}
	}
	d, err := p.pk.Decide(ps, p.rng)
	if err != nil {
		panic(err) // the two configured paths are always in the view
	}
	if !d.Send {
		if d.Ticket != 0 {
			p.wait = pendingReward{d.Ticket, v.Now}
		}
		return sched.Decision{Path: sched.Wait, Chunk: sched.Head}
	}
	ch := v.Queue.PendingAt(0)
	switch {
	case d.Ticket != 0:
		p.byChunk[ch] = pendingReward{d.Ticket, v.Now}
	case p.wait.t != 0:
		p.byChunk[ch] = p.wait
		p.wait = pendingReward{}
	}
	return sched.Decision{Path: d.Path, Chunk: sched.Head}
}

func (p *peekSched) acked(ch, _ int, now time.Duration) {
	pr, ok := p.byChunk[ch]
	if !ok {
		return
	}
	delete(p.byChunk, ch)
	rw, err := peekaboo.Reward(float64(p.payload), max(now-pr.at, time.Microsecond).Seconds())
	if err == nil {
		err = p.pk.Learn(pr.t, rw)
	}
	if err != nil {
		panic(err) // tickets are issued once and rewarded once
	}
}
