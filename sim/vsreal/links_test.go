package vsreal

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/scenario"
	"github.com/hetquic/hetquic/sim"
)

// linkCases are scenarios that exercise every part of the link model: rate
// and a small queue, Gilbert–Elliott and Bernoulli loss, the three jitter
// distributions with and without reordering, a rate trace, a loss trace,
// queue bytes, a parameter change and an outage.
var linkCases = map[string]string{
	"rate, GE, normal jitter, outage": `name: a
paths:
  - name: p
    up: {}
    down: {delay_ms: 10, jitter_ms: 3, rate_mbps: 8, queue_packets: 20,
           gilbert_elliott: {p_good_bad: 0.05, p_bad_good: 0.3, loss_good: 0.01, loss_bad: 0.5}}
events:
  - {at_s: 0.5, path: p, outage_s: 0.15}
`,
	"uniform jitter reordered, Bernoulli, set": `name: b
paths:
  - name: p
    up: {}
    down: {delay_ms: 5, jitter_ms: 4, jitter_dist: uniform, reorder: true, loss: 0.1, rate_mbps: 12, queue_bytes: 30000}
events:
  - {at_s: 0.3, path: p, set: {down: {rate_mbps: 4, jitter_dist: pareto}}}
`,
	"traces": `name: c
paths:
  - name: p
    up: {}
    down: {delay_ms: 2, jitter_ms: 1, jitter_dist: pareto, rate_trace: r.mahi, loss_trace: l.loss, queue_packets: 30}
events:
  - {at_s: 0.4, path: p, set: {down: {delay_ms: 8}}}
`,
}

// offer is one packet offered to the link: its time and its size. Sizes
// are distinct, so a packet is known by its size in the emulator's log.
type offer struct {
	at   time.Duration
	size int
}

// offers is a bursty arrival pattern: sizes a permutation of 100..1499
// bytes, gaps 0 (a burst) or up to 1.2 ms, times off whole milliseconds so
// that no packet arrives at the instant of a scenario event.
func offers() []offer {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []offer
	at := 7 * time.Nanosecond
	for _, i := range rng.Perm(1400) {
		if rng.Float64() > 0.3 {
			at += time.Duration(rng.Int64N(int64(1200 * time.Microsecond)))
		}
		out = append(out, offer{at, 100 + i})
	}
	return out
}

// TestLinkDriversAgree: the same scenario and seed give the same per-packet
// drops and delays in the emulator and the simulator, because both drive
// the one link model (internal/linkmodel) with the same random streams.
// So the simulator's validation against real QUIC compares transports.
func TestLinkDriversAgree(t *testing.T) {
	fsys := fstest.MapFS{
		"r.mahi": {Data: []byte("1\n1\n3\n4\n4\n4\n7\n9\n10\n")},
		"l.loss": {Data: []byte("0 0 0 1 0 0 1 1 0 0 0 0 0 1\n")},
	}
	for name, yaml := range linkCases {
		t.Run(name, func(t *testing.T) {
			fsys["s.yaml"] = &fstest.MapFile{Data: []byte(yaml)}
			sc, err := scenario.Load(fsys, "s.yaml")
			if err != nil {
				t.Fatal(err)
			}
			in := offers()
			for _, seed := range []uint64{1, 2} {
				got, want := emuOutcomes(t, sc, seed, in), simOutcomes(t, sc, seed, in)
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("seed %d: packet %d (%d bytes at %v): emulator %s, simulator %s",
						seed, i, in[i].size, in[i].at, got[i], want[i])
				}
				if !mixed(want) {
					t.Fatalf("seed %d: the case delivers with one delay or drops nothing", seed)
				}
			}
		})
	}
}

// An outcome is a packet's fate: why it was dropped, or its one-way delay.
type outcome struct {
	drop  emu.Cause // CauseNone: delivered
	delay time.Duration
}

func (o outcome) String() string {
	if o.drop != emu.CauseNone {
		return "dropped (" + o.drop.String() + ")"
	}
	return "delivered after " + o.delay.String()
}

// eventLog is an emu.EventLog that calls a function.
type eventLog func(emu.PacketEvent)

func (f eventLog) Record(ev emu.PacketEvent) { f(ev) }

func emuOutcomes(t *testing.T, sc *scenario.Scenario, seed uint64, in []offer) []outcome {
	t.Helper()
	var (
		mu     sync.Mutex
		bySize = map[int]outcome{}
	)
	log := eventLog(func(ev emu.PacketEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case emu.EventDrop:
			bySize[ev.Size] = outcome{drop: ev.Cause}
		case emu.EventOut:
			bySize[ev.Size] = outcome{delay: ev.Delay}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e, err := emu.New(emu.Config{Scenario: sc, Seed: seed, Clock: emu.GoClock{}, Log: log,
			Sink: emu.SinkFunc(func(int, emu.Dir, []*emu.Packet) {})})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for _, o := range in {
			time.Sleep(o.at - e.Now())
			p := e.NewPacket()
			p.Data = append(p.Data, make([]byte, o.size)...)
			e.Input(0, emu.Down, []*emu.Packet{p})
		}
		time.Sleep(10 * time.Second) // every held packet released
	})
	out := make([]outcome, len(in))
	for i, o := range in {
		oc, ok := bySize[o.size]
		if !ok {
			t.Fatalf("emulator: no fate for packet %d", i)
		}
		out[i] = oc
	}
	return out
}

func simOutcomes(t *testing.T, sc *scenario.Scenario, seed uint64, in []offer) []outcome {
	t.Helper()
	s := sim.New(seed)
	h, err := sim.NewHostNet(s, sc)
	if err != nil {
		t.Fatal(err)
	}
	l := h.Down[0]
	out := make([]outcome, len(in))
	// Packets not delivered and not dropped on arrival were dropped in the
	// air by an outage.
	for i := range out {
		out[i] = outcome{drop: emu.CauseOutage}
	}
	sink := receiverFunc(func(p *sim.Packet) { out[p.PN] = outcome{delay: s.Now() - in[p.PN].at} })
	for i, o := range in {
		s.At(o.at, func() {
			before := l.Stats
			sim.Send(&sim.Packet{Size: o.size, PN: uint64(i)}, []*sim.Link{l}, sink)
			switch {
			case l.Stats.LossDrops > before.LossDrops:
				out[i] = outcome{drop: emu.CauseLoss}
			case l.Stats.QueueDrops > before.QueueDrops:
				out[i] = outcome{drop: emu.CauseQueue}
			}
		})
	}
	s.Run(0, 0, nil)
	return out
}

type receiverFunc func(*sim.Packet)

func (f receiverFunc) Receive(p *sim.Packet) { f(p) }

func firstDiff(a, b []outcome) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// mixed reports whether a case delivers packets with at least two distinct
// delays and drops some, so that agreement is not trivial.
func mixed(os []outcome) bool {
	delays := map[time.Duration]bool{}
	dropped := false
	for _, o := range os {
		if o.drop != emu.CauseNone {
			dropped = true
		} else {
			delays[o.delay] = true
		}
	}
	return dropped && len(delays) > 1
}
