// Package env is RIDE's environment: the tiled 360° video of package ride
// streamed over hetquic's packet-level simulator, one scheduling decision
// per viewed tile. It is the network side of the gymnasium environment
// (python/src/hetquic_rl) and of `hetquic exp run ride-…`.
//
// Time. Frames are released to the sender in decoding order (each I or P
// frame ahead of the B frames it precedes, Fig. 5.2), one every frame slot
// (33 ms); frame i plays in [t₁, t₂] = Playout + i·33 ms + [0, 33 ms].
// All viewed tiles of a released frame are decided at its release time;
// then the simulation runs to the next release.
//
// Paths. One MPQUIC connection of hetquic's simulator (cubic, RFC 9002
// recovery per path) carries the video: a tile sent on path m opens a
// stream pinned to m (sim.StreamOpts.Pinned), so tiles on a path share its
// window in the order they were sent and a loss delays only its own tile.
// The state features ŵ, τ, ε are the connection's per-path state
// (Conn.PathView), b the rate at which the path delivers.
//
// Reward. A tile's true reward (Eq. 5.13 with its decoded time) is known
// only after later decisions; gymnasium needs one at each step. The step
// reward is Eq. 5.13 with Eq. 5.1's arrival estimate, computed from the
// connection's state at the decision (as the thesis's transmission model
// does), plus the correction (true − predicted) of every earlier decision
// that settled during the step. At the episode's end the simulation runs
// until every decision has settled, so an episode's return is exactly the
// sum of its true rewards: the prediction only shapes when the credit
// arrives, never how much there is.
package env

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hetquic/hetquic/ride"
	"github.com/hetquic/hetquic/sim"
)

// Config describes an episode.
type Config struct {
	Seed  uint64 // network randomness, head-movement user and start frame
	Video int    // index into Videos: 0…3 train, 4 test (§5.5.1)
	// Frames is the number of frames per episode (0: to the end of the
	// video); Start the first frame (−1: a GoP start drawn from Seed).
	Frames, Start int
	// Playout is the playback delay of frame 0 after its release (default
	// 150 ms, the interactive-streaming threshold cited in §5.4.2).
	Playout time.Duration
	Level   int // quality level streamed (−1: the top level)
	Reward  ride.RewardParams
	// Warmup is the number of frames streamed before the episode (the
	// frames before its start, or the video's last frames before frame 0),
	// each tile on the path with the fewest bytes queued, so that windows,
	// RTT and rate estimates are warm (default 15).
	Warmup int
	Paths  []PathModel // default LTE, Wi-Fi
	// Record keeps every tile's outcome and the byte time series for
	// evaluation reports.
	Record bool
}

// Defaults.
const (
	DefaultPlayout = 150 * time.Millisecond
	DefaultWarmup  = 15
	// Videos is the number of generated videos: four to train on and one
	// to test (§5.5.1), plus one to choose among trained policies
	// (checkpoints, training seeds) so that the test video never does.
	Videos          = 6
	TestVideo       = 4
	ValidationVideo = 5
	// videoSeconds is each video's length (§5.5.1: 60 s, 1800 frames).
	videoSeconds = 60
	// videoSeedBase and userSeedBase make the video set and users fixed.
	videoSeedBase = 0x5249_4445 // "RIDE"
	cc            = "cubic"
)

func (c *Config) defaults() {
	if c.Playout == 0 {
		c.Playout = DefaultPlayout
	}
	if c.Reward == (ride.RewardParams{}) {
		c.Reward = ride.DefaultReward
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if len(c.Paths) == 0 {
		c.Paths = []PathModel{LTE, WiFi}
	}
}

// Video returns generated video k (deterministic) and the viewport of the
// user drawn from userSeed.
func Video(k int, userSeed uint64) (*ride.Video, *ride.Viewport, error) {
	v, err := video(k)
	if err != nil {
		return nil, nil, err
	}
	h := ride.GenerateHead(v.Frames(), ride.FoVConfig{}, rand.New(rand.NewPCG(userSeed, uint64(k)+100)))
	vp, err := ride.ViewportFromHead(h, ride.FoVConfig{})
	return v, vp, err
}

var (
	videoMu    sync.Mutex
	videoCache [Videos]*ride.Video
)

// video generates video k once per process: a server resets often, and a
// video (1800 frames × 200 tiles × 4 levels) costs far more than an
// episode's start; the user's head movement is drawn per episode.
func video(k int) (*ride.Video, error) {
	if k < 0 || k >= Videos {
		return nil, fmt.Errorf("video %d: want 0…%d (0–3 train, %d test, %d validation)", k, Videos-1, TestVideo, ValidationVideo)
	}
	videoMu.Lock()
	defer videoMu.Unlock()
	if videoCache[k] == nil {
		v, err := ride.Generate(ride.GenConfig{Name: fmt.Sprintf("video%d", k), Seconds: videoSeconds}, rand.New(rand.NewPCG(videoSeedBase, uint64(k))))
		if err != nil {
			return nil, err
		}
		videoCache[k] = v
	}
	return videoCache[k], nil
}

// tileFrame is the sender's record of f_{i,z}.
type tileFrame struct {
	sent     bool
	path     int
	sentAt   time.Duration
	pred     time.Duration // Eq. 5.1 estimate made when sent
	arrived  time.Duration // ride.Never until it arrives
	bytes    int
	inBundle int // bundle id (−1: none)
}

// bundle is one write to a path: a decided tile and the frames it needs.
type bundle struct {
	id, path int
	members  []tfKey
	bytes    int
	sentAt   time.Duration
	tag      uint64 // a learning policy's ticket (0: none)
}

type tfKey struct{ i, z int }

// index is the key's slot in Env.tfs and the memo.
func (k tfKey) index() int { return k.i*ride.Tiles + k.z }

// decision is one decided viewed tile, until its true reward settles.
type decision struct {
	i, z   int
	action int
	t1, t2 time.Duration
	gamma  time.Duration
	cost   time.Duration
	pred   float64
	bytes  int
}

// TileOutcome is a decided tile's fate (Record).
type TileOutcome struct {
	Frame, Tile int
	Type        ride.FrameType
	Action      int
	Bytes       int
	Decoded     time.Duration // ride.Never: not decoded by the deadline
	T1, T2      time.Duration
	Deadline    time.Duration
	Stages      ride.Stages
	Reward      float64 // true Eq. 5.13 reward
	Predicted   float64 // the step reward (Eq. 5.1 estimate)
	Quality     int
}

// Env is one episode's simulation. Not safe for concurrent use.
type Env struct {
	cfg   Config
	video *ride.Video
	vp    *ride.Viewport
	order []int // display indices in decoding order
	pos   []int // pos[i]: position of display frame i in order
	level int

	s      *sim.Sim
	conn   *sim.Conn
	paths  []*netPath
	meters []rateMeter
	queued []int // per path: bytes written, not yet delivered

	base  time.Duration // video time of sim time 0
	first int           // first decoding position of the episode
	last  int           // one past the last
	k     int           // current decoding position
	queue []int         // tiles of the current frame still to decide
	// tfs holds every tile-frame sent so far, indexed by tfKey.index: a
	// slice, not a map, since decodeTimes and needed look one up for every
	// frame of a GoP on every step (the map's hashing was a quarter of an
	// evaluation's CPU time).
	tfs []*tileFrame
	// memo is settle's per-pass memo of decode times by GoP start and tile
	// (the same index); an entry is valid in the pass its stamp names, so a
	// pass clears nothing.
	memo     [][]time.Duration
	memoPass []uint32
	pass     uint32
	pending  []*decision
	nextID   int
	done     bool
	steps    int

	learner Learner
	// settled accumulates true rewards settled since the last step and
	// correction their differences from the step rewards they replace.
	settledSum, correction float64
	settledN               int

	// Record.
	Outcomes []TileOutcome
	// Arrivals and Decoded are (time, bytes) samples: every tile-frame's
	// arrival, and every viewed tile decoded before the end of its slot.
	Arrivals, Decoded []Sample
}

// Sample is an amount of bytes at a simulated time.
type Sample struct {
	At    time.Duration
	Bytes int
}

// Learner is a policy that learns from the delivery of what it sent
// (Peekaboo): Tag is called at each decision, Delivered when the bundle
// sent with that tag has arrived.
type Learner interface {
	Tag() uint64
	Delivered(tag uint64, elapsed time.Duration, bytes int)
}

// ErrDone is returned by Step after the episode ended.
var ErrDone = errors.New("episode is over: reset first")

// New starts an episode and returns it positioned at its first decision.
func New(cfg Config) (*Env, error) {
	cfg.defaults()
	for _, p := range cfg.Paths {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Reward.Alpha < 0 || cfg.Reward.Alpha > 1 || cfg.Reward.Unit <= 0 {
		return nil, fmt.Errorf("reward: alpha %v must be in [0, 1] and unit > 0", cfg.Reward.Alpha)
	}
	v, vp, err := Video(cfg.Video, cfg.Seed)
	if err != nil {
		return nil, err
	}
	n := v.Frames() * ride.Tiles
	e := &Env{cfg: cfg, video: v, vp: vp, tfs: make([]*tileFrame, n), memo: make([][]time.Duration, n), memoPass: make([]uint32, n)}
	e.level = cfg.Level
	if e.level < 0 || e.level >= v.Levels {
		if cfg.Level != -1 {
			return nil, fmt.Errorf("level %d: want −1 (top) or 0…%d", cfg.Level, v.Levels-1)
		}
		e.level = v.Levels - 1
	}
	e.order, e.pos = decodeOrder(v)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5354))
	start := cfg.Start
	gops := v.Frames() / len(ride.DefaultGoP)
	if start < 0 {
		frames := cfg.Frames
		if frames <= 0 {
			frames = v.Frames()
		}
		maxGoP := max(1, (v.Frames()-frames)/len(ride.DefaultGoP)+1)
		start = rng.IntN(min(maxGoP, max(gops, 1))) * len(ride.DefaultGoP)
	}
	if start >= v.Frames() || v.Types[start] != ride.I {
		return nil, fmt.Errorf("start frame %d: want an I frame of the %d-frame video", start, v.Frames())
	}
	e.first = e.pos[start]
	e.last = len(e.order)
	if cfg.Frames > 0 {
		e.last = min(len(e.order), e.first+cfg.Frames)
	}
	warm := cfg.Warmup
	e.base = time.Duration(e.first-warm) * ride.FrameDur
	e.s = sim.New(cfg.Seed)
	var specs []sim.PathSpec
	for m, pm := range cfg.Paths {
		np := newNetPath(e.s, pm, m)
		e.paths = append(e.paths, np)
		specs = append(specs, sim.PathSpec{Name: pm.Name, Fwd: []*sim.Link{np.down}, Rev: []*sim.Link{np.up}})
	}
	c, err := sim.NewConn(e.s, sim.ConnConfig{Flow: 1, CC: cc, Scheduler: "minrtt"}, specs)
	if err != nil {
		return nil, err
	}
	c.Receiver().OnDeliver = e.onDeliver
	e.conn = c
	e.meters = make([]rateMeter, len(cfg.Paths))
	e.queued = make([]int, len(cfg.Paths))
	// Warm-up: the frames before the episode, each viewed tile on the
	// path with the least queued time (no bookkeeping, no rewards).
	for k := e.first - warm; k < e.first; k++ {
		e.runTo(e.release(k))
		i := e.order[(k+len(e.order))%len(e.order)] // before frame 0: the video's end
		for z := 0; z < ride.Tiles; z++ {
			if vp.View[i][z] {
				best := 0
				for m := range e.paths {
					if e.queued[m] < e.queued[best] {
						best = m
					}
				}
				e.write(best, int(v.Size[i][z][e.level]), nil)
			}
		}
	}
	e.k = e.first - 1
	e.advance()
	return e, nil
}

// decodeOrder puts each anchor (I or P) ahead of the B frames it follows
// in display order (Fig. 5.2), GoP by GoP.
func decodeOrder(v *ride.Video) (order, pos []int) {
	var bs []int
	for i, t := range v.Types {
		if t == ride.I && len(bs) > 0 { // a GoP ending with B frames
			order = append(order, bs...)
			bs = bs[:0]
		}
		if t == ride.B {
			bs = append(bs, i)
			continue
		}
		order = append(order, i)
		order = append(order, bs...)
		bs = bs[:0]
	}
	order = append(order, bs...)
	pos = make([]int, len(order))
	for k, i := range order {
		pos[i] = k
	}
	return order, pos
}

// release is the simulated time decoding position k is released.
func (e *Env) release(k int) time.Duration { return time.Duration(k)*ride.FrameDur - e.base }

// playback returns frame i's slot in simulated time.
func (e *Env) playback() ride.Playback { return ride.Playback{Start: e.cfg.Playout - e.base} }

// runTo runs the simulation to t (sim.Run reads until ≤ 0 as "no limit",
// and the links' variation never runs out of events: only run forward).
func (e *Env) runTo(t time.Duration) {
	if t > e.s.Now() {
		e.s.Run(t, 0, nil)
	}
	e.settle()
}

// write sends bytes on a new stream pinned to path m; b (may be nil)
// learns when the stream is delivered.
func (e *Env) write(m, bytes int, b *bundle) {
	st, err := e.conn.OpenStream(0, sim.StreamOpts{Pinned: true, Path: m})
	if err != nil {
		panic(err) // the options are valid by construction
	}
	e.queued[m] += bytes
	if b != nil {
		b.path = m
		st.OnDone = func(ev sim.StreamEvent) {
			if ev.Kind == sim.StreamDelivered {
				e.delivered(b, ev.At)
			}
		}
	}
	st.Write(int64(bytes))
	st.Close()
}

func (e *Env) onDeliver(d sim.Delivery) {
	payload := e.conn.Payload()
	e.meters[d.ArrivedOn].add(d.At, float64(payload))
	e.queued[d.ArrivedOn] = max(0, e.queued[d.ArrivedOn]-payload)
}

// delivered records bundle b's arrival.
func (e *Env) delivered(b *bundle, at time.Duration) {
	for _, key := range b.members {
		e.tfs[key.index()].arrived = at
	}
	if e.cfg.Record {
		e.Arrivals = append(e.Arrivals, Sample{at, b.bytes})
	}
	if b.tag != 0 && e.learner != nil {
		e.learner.Delivered(b.tag, at-b.sentAt, b.bytes)
	}
}

// advance moves to the next frame with viewed tiles, running the
// simulation to its release; at the end of the episode it sets done.
func (e *Env) advance() {
	for {
		e.k++
		if e.k >= e.last {
			e.done = true
			return
		}
		e.runTo(e.release(e.k))
		i := e.order[e.k]
		e.queue = e.queue[:0]
		for z := 0; z < ride.Tiles; z++ {
			if e.vp.View[i][z] {
				e.queue = append(e.queue, z)
			}
		}
		if len(e.queue) > 0 {
			return
		}
	}
}

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Terminated reports whether the episode ended with the video (rather
// than at its frame budget, a truncation).
func (e *Env) Terminated() bool { return e.done && e.last == len(e.order) }

// State is the observation for the tile to decide now.
func (e *Env) State() *ride.State {
	st := &ride.State{Now: e.s.Now(), Paths: make([]ride.PathState, len(e.paths))}
	for m := range e.paths {
		pv := e.conn.PathView(m)
		st.Paths[m] = ride.PathState{
			AvailCwnd: float64(max(0, pv.Cwnd-pv.InFlight)), Cwnd: float64(pv.Cwnd),
			BwBps: pathRate(e.meters[m].bps(e.s.Now()), pv.Cwnd, pv.SRTT), SRTT: pv.SRTT, Loss: pv.LossRate,
			Backlog: float64(e.queued[m]), CanSend: pv.CanSend(1500),
		}
	}
	if e.done {
		return st
	}
	i, z := e.order[e.k], e.queue[0]
	gs := e.video.GoPStart(i)
	pb := e.playback()
	need := e.needed(i, z)
	bundleBytes := 0
	for _, key := range need {
		bundleBytes += e.size(key)
	}
	st.Tile = ride.TileState{Frame: i, Tile: z, Type: e.video.Types[i], Bytes: e.size(tfKey{i, z}),
		BundleBytes: bundleBytes, ToPlayback: pb.T1(i) - e.s.Now(),
		ToDeadline: pb.Deadline(gs+e.deadlineFrame(i, z)) - e.s.Now(), LeftInFrame: len(e.queue) - 1}
	return st
}

// pathRate is a path's rate estimate: the delivery rate measured over the
// last second, or, for a path that delivered nothing in it (idle, or
// just used again), one window per round trip. Without the fallback an
// idle path's Eq. 5.1 arrival is "never", sending on it scores like
// skipping, and every tile goes to the path already in use.
func pathRate(measured float64, cwnd int, srtt time.Duration) float64 {
	if measured > 0 || srtt <= 0 {
		return measured
	}
	return float64(cwnd) * 8 / srtt.Seconds()
}

func (e *Env) size(k tfKey) int { return int(e.video.Size[k.i][k.z][e.level]) }

// gop returns the types and viewport column of tile z over frame i's GoP.
func (e *Env) gop(i, z int) (gs int, h []ride.FrameType, v []bool) {
	gs, ge := e.video.GoPStart(i), e.video.GoPEnd(i)
	v = make([]bool, ge-gs)
	for x := gs; x < ge; x++ {
		v[x-gs] = e.vp.View[x][z]
	}
	return gs, e.video.Types[gs:ge], v
}

// deadlineFrame is Eq. 5.8's j, relative to the GoP start.
func (e *Env) deadlineFrame(i, z int) int {
	gs, h, v := e.gop(i, z)
	return ride.DeadlineFrame(h, v, i-gs)
}

// needed lists f_{i,z} and the frames it decodes from that were never
// sent (§5.4.2: they travel with it).
func (e *Env) needed(i, z int) []tfKey {
	gs, h, _ := e.gop(i, z)
	var out []tfKey
	for _, x := range ride.Closure(h, i-gs) {
		key := tfKey{gs + x, z}
		if tf := e.tfs[key.index()]; tf == nil || !tf.sent {
			out = append(out, key)
		}
	}
	return out
}

// Info is what a step reports besides the observation and reward.
type Info struct {
	Frame, Tile int
	Type        string
	// Settled is the sum of the true rewards settled during this step and
	// SettledN their number; Predicted is this decision's Eq. 5.13 reward
	// with the Eq. 5.1 estimate (the step reward less the corrections).
	Settled, Predicted float64
	SettledN           int
}

// SetLearner makes l receive delivery feedback for tagged decisions.
func (e *Env) SetLearner(l Learner) { e.learner = l }

// Step applies action (a path index or ride.Skip) to the current tile and
// returns the step reward: Eq. 5.13 with the Eq. 5.1 arrival estimate,
// corrected by the true rewards that settled meanwhile (see the package
// comment). The last step of an episode settles every decision.
func (e *Env) Step(action int) (float64, Info, error) {
	if e.done {
		return 0, Info{}, ErrDone
	}
	if action != ride.Skip && (action < 0 || action >= len(e.paths)) {
		return 0, Info{}, fmt.Errorf("action %d: want %d (skip) or a path 0…%d", action, ride.Skip, len(e.paths)-1)
	}
	st := e.State()
	i, z := st.Tile.Frame, st.Tile.Tile
	now := e.s.Now()
	pb := e.playback()
	gs := e.video.GoPStart(i)
	d := &decision{i: i, z: z, action: action, t1: pb.T1(i), t2: pb.T2(i),
		gamma: pb.Deadline(gs + e.deadlineFrame(i, z)), bytes: st.Tile.Bytes}
	if action != ride.Skip {
		p := st.Paths[action]
		need := e.needed(i, z)
		e.nextID++
		b := &bundle{id: e.nextID, members: need, bytes: st.Tile.BundleBytes, sentAt: now}
		if e.learner != nil {
			b.tag = e.learner.Tag()
		}
		pv := e.conn.PathView(action)
		pred := ride.ArrivalEstimate(now, int(p.Backlog)+b.bytes, e.conn.Payload(), p.BwBps,
			float64(pv.Cwnd)/1500, p.Loss, p.SRTT)
		for _, key := range need {
			e.tfs[key.index()] = &tileFrame{sent: true, path: action, sentAt: now, pred: pred, arrived: ride.Never, bytes: e.size(key), inBundle: b.id}
		}
		e.write(action, b.bytes, b)
		d.cost = ride.TxCost(b.bytes, p.BwBps)
	}
	d.pred = e.reward(d, e.predictedDecode(d))
	e.pending = append(e.pending, d)
	e.steps++
	e.queue = e.queue[1:]
	e.settledSum, e.settledN, e.correction = 0, 0, 0
	if len(e.queue) == 0 {
		e.advance()
		if e.done {
			e.drain()
		}
	}
	return d.pred + e.correction, Info{Frame: i, Tile: z, Type: e.video.Types[i].String(), Settled: e.settledSum,
		SettledN: e.settledN, Predicted: d.pred}, nil
}

// decodeTimes is the decoded time (§5.3.3) of every frame of the GoP that
// starts at frame gs, for tile z, from the arrivals known now, using each
// unarrived sent frame's Eq. 5.1 estimate when predict is set (else Never).
func (e *Env) decodeTimes(gs, z int, predict bool) []time.Duration {
	h := e.video.Types[gs:e.video.GoPEnd(gs)]
	a := make([]time.Duration, len(h))
	for x := range a {
		a[x] = ride.Never
		if tf := e.tfs[tfKey{gs + x, z}.index()]; tf != nil && tf.sent {
			switch {
			case tf.arrived != ride.Never:
				a[x] = tf.arrived
			case predict:
				a[x] = tf.pred
			}
		}
	}
	return ride.DecodeTimes(h, a)
}

// predictedDecode is decision d's decoded time as Step predicts it; a
// skip is never decoded.
func (e *Env) predictedDecode(d *decision) time.Duration {
	if d.action == ride.Skip {
		return ride.Never
	}
	gs := e.video.GoPStart(d.i)
	return e.decodeTimes(gs, d.z, true)[d.i-gs]
}

// reward is Eq. 5.13 for decision d, given its decoded time dec (predicted
// or true).
func (e *Env) reward(d *decision, dec time.Duration) float64 {
	if d.action == ride.Skip {
		return ride.Reward(e.cfg.Reward, true, ride.Stages{}, d.t1, d.gamma, 0)
	}
	return ride.Reward(e.cfg.Reward, false, ride.StagesOf(dec, d.t1, d.t2, d.gamma), d.t1, d.gamma, d.cost)
}

// settle computes the true reward of every decision whose decoded time is
// known or whose deadline has passed. The pending decisions of one GoP and
// tile share their decode times, and nothing arrives during a pass, so each
// GoP-tile's are computed once per pass (memo), not once per decision: this
// was most of an evaluation's CPU time.
func (e *Env) settle() {
	now := e.s.Now()
	e.pass++
	keep := e.pending[:0]
	for _, d := range e.pending {
		dec := ride.Never
		if d.action != ride.Skip {
			gs := e.video.GoPStart(d.i)
			m := tfKey{gs, d.z}.index()
			if e.memoPass[m] != e.pass {
				e.memo[m], e.memoPass[m] = e.decodeTimes(gs, d.z, false), e.pass
			}
			dec = e.memo[m][d.i-gs]
		}
		if dec == ride.Never && now < d.gamma {
			keep = append(keep, d)
			continue
		}
		r := e.reward(d, dec)
		e.settledSum += r
		e.correction += r - d.pred
		e.settledN++
		if e.cfg.Record {
			if dec >= d.gamma {
				dec = ride.Never
			}
			e.Outcomes = append(e.Outcomes, TileOutcome{Frame: d.i, Tile: d.z, Type: e.video.Types[d.i], Action: d.action,
				Bytes: d.bytes, Decoded: dec, T1: d.t1, T2: d.t2, Deadline: d.gamma,
				Stages: ride.StagesOf(dec, d.t1, d.t2, d.gamma), Reward: r, Predicted: d.pred, Quality: e.level})
			if dec < d.t2 {
				e.Decoded = append(e.Decoded, Sample{dec, d.bytes})
			}
		}
	}
	e.pending = keep
}

// drain runs the simulation until every decision has settled.
func (e *Env) drain() {
	for len(e.pending) > 0 {
		e.runTo(e.s.Now() + ride.FrameDur)
	}
}

// Steps is the number of decisions taken.
func (e *Env) Steps() int { return e.steps }

// Now is the simulated time.
func (e *Env) Now() time.Duration { return e.s.Now() }

// Events is the number of simulator events run so far.
func (e *Env) Events() uint64 { return e.s.Events() }

// RateTrace returns path m's downlink rate per RateEpoch in Mbit/s.
func (e *Env) RateTrace(m int) []float64 { return e.paths[m].rateTrace }
