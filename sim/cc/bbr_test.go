package cc

import (
	"math"
	"testing"
	"time"
)

// pipe drives a controller over a fluid bottleneck: rate bytes/s, an
// unbounded FIFO, then a propagation RTT given as a function of time. It
// returns the controller's state after each ACK via visit.
func pipe(c Controller, rate float64, prop func(time.Duration) time.Duration, until time.Duration, visit func(now time.Duration)) {
	type inflight struct{ sentAt, ackAt time.Duration }
	var q []inflight
	bytes := 0
	now, linkFree := time.Duration(0), time.Duration(0)
	ser := time.Duration(float64(mss) / rate * float64(time.Second))
	var rtt RTT
	for now < until {
		for bytes+mss <= c.Window() {
			linkFree = max(linkFree, now) + ser
			q = append(q, inflight{now, linkFree + prop(now)})
			bytes += mss
			c.OnPacketSent(now, mss, bytes)
		}
		p := q[0]
		q = q[1:]
		now = p.ackAt
		bytes -= mss
		r := now - p.sentAt
		rtt = RTT{Latest: r, Smoothed: r, Min: min(r, max(rtt.Min, r))}
		c.OnRTTSample(now, rtt)
		c.OnAck(now, mss, p.sentAt, rtt)
		visit(now)
	}
}

func TestBBRStateTransitions(t *testing.T) {
	b := NewBBR(Config{MSS: mss})
	const rate = 1.25e6 // 10 Mbit/s
	ms := time.Millisecond
	// 50 ms propagation, 80 ms from 5 s on (a longer route): RTprop is not
	// refreshed below its old value, so ProbeRTT comes 10 s later.
	prop := func(t time.Duration) time.Duration {
		if t >= 5*time.Second {
			return 80 * ms
		}
		return 50 * ms
	}
	var seen []BBRState
	enter := map[BBRState]time.Duration{}
	pipe(b, rate, prop, 20*time.Second, func(now time.Duration) {
		if len(seen) == 0 || seen[len(seen)-1] != b.State() {
			seen = append(seen, b.State())
			if _, ok := enter[b.State()]; !ok {
				enter[b.State()] = now
			}
		}
	})
	want := []BBRState{BBRStartup, BBRDrain, BBRProbeBW, BBRProbeRTT, BBRProbeBW}
	if len(seen) < len(want) {
		t.Fatalf("states %v, want at least %v", seen, want)
	}
	for i, s := range want {
		if seen[i] != s {
			t.Fatalf("states %v, want prefix %v", seen, want)
		}
	}
	// Startup: 3 rounds without 25 % growth after the pipe is full; with
	// a 2.89× gain per round from 10 packets, well under 1.5 s at 50 ms.
	if enter[BBRDrain] > 1500*ms {
		t.Errorf("Drain entered at %v, want < 1.5 s", enter[BBRDrain])
	}
	// ProbeRTT once RTprop (set before 5 s) is 10 s old.
	if e := enter[BBRProbeRTT]; e < 10*time.Second || e > 15*time.Second+200*ms {
		t.Errorf("ProbeRTT entered at %v, want within (10 s, 15.2 s]", e)
	}
	if got := b.BtlBw(); math.Abs(got-rate)/rate > 0.1 {
		t.Errorf("BtlBw %.0f B/s, want within 10 %% of %.0f", got, rate)
	}
	if got := b.RTprop(); got < 80*ms || got > 85*ms {
		t.Errorf("RTprop %v after ProbeRTT, want ≈ 80 ms + one serialisation", got)
	}
	if g := b.PacingGain(); b.State() == BBRProbeBW && g != 1.25 && g != 0.75 && g != 1 {
		t.Errorf("ProbeBW gain %v", g)
	}
}

func TestBBRGainCycle(t *testing.T) {
	b := NewBBR(Config{MSS: mss})
	b.state, b.rtProp = BBRProbeBW, 50*time.Millisecond
	b.bwSamples[0] = 1e6
	b.enterProbeBW(0)
	var gains []float64
	for i := 0; i < 8; i++ {
		gains = append(gains, b.PacingGain())
		b.advance(time.Duration(i+1) * 51 * time.Millisecond)
	}
	// Starts cruising (index 2), then 1,1,1,1,1, probe 1.25, drain 0.75.
	want := []float64{1, 1, 1, 1, 1, 1, 1.25, 0.75}
	for i := range want {
		if gains[i] != want[i] {
			t.Fatalf("gain cycle %v, want %v", gains, want)
		}
	}
	// Window = gain·BDP + 2 MSS; BDP = 1e6·0.05 = 50 000 B.
	b.cycleIdx = 0
	if got, want := b.Window(), int(1.25*50000+2*mss); got != want {
		t.Errorf("probe window %d, want %d", got, want)
	}
	b.cycleIdx = 1
	if got, want := b.Window(), int(0.75*50000+2*mss); got != want {
		t.Errorf("drain-phase window %d, want %d", got, want)
	}
}
