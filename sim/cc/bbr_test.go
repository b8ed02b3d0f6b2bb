package cc

import (
	"math"
	"testing"
	"time"
)

// pipe drives a controller over a fluid bottleneck: rate bytes/s, an
// unbounded FIFO, then a propagation RTT given as a function of time; every
// packet is acknowledged on its own. A controller that paces (Pacer) sends
// one packet per MSS/PacingRate, others whenever the window has room. visit
// sees the controller and the RTT sample after each ACK.
func pipe(c Controller, rate float64, prop func(time.Duration) time.Duration, until time.Duration, visit func(now time.Duration, rtt RTT)) {
	type inflight struct{ sentAt, ackAt time.Duration }
	var q []inflight
	bytes := 0
	now, linkFree, nextSend := time.Duration(0), time.Duration(0), time.Duration(0)
	ser := time.Duration(float64(mss) / rate * float64(time.Second))
	pacer, paced := c.(Pacer)
	var rtt RTT
	for now < until {
		for bytes+mss <= c.Window() && nextSend <= now {
			linkFree = max(linkFree, now) + ser
			q = append(q, inflight{now, linkFree + prop(now)})
			bytes += mss
			c.OnPacketSent(now, mss, bytes)
			if paced {
				nextSend = now + time.Duration(float64(mss)/pacer.PacingRate(now)*float64(time.Second))
			}
		}
		if bytes+mss <= c.Window() && (len(q) == 0 || nextSend < q[0].ackAt) {
			now = nextSend // the pacer, not an ACK, releases the next packet
			continue
		}
		p := q[0]
		q = q[1:]
		now = p.ackAt
		bytes -= mss
		r := now - p.sentAt
		rtt = RTT{Latest: r, Smoothed: r, Min: min(r, max(rtt.Min, r))}
		c.OnRTTSample(now, rtt)
		c.OnAck(now, mss, p.sentAt, rtt)
		visit(now, rtt)
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
	var queueSum time.Duration
	var queueN int
	pipe(b, rate, prop, 20*time.Second, func(now time.Duration, rtt RTT) {
		if b.State() == BBRProbeBW {
			// Paced at gain·BtlBw; the window only caps inflight.
			if got, want := b.PacingRate(now), b.PacingGain()*b.BtlBw(); got != want {
				t.Fatalf("%v: pacing rate %.0f, want gain·BtlBw = %.0f", now, got, want)
			}
			if cap := 2*b.BDP() + 3*b.sendQuantum(); float64(b.Window()) > cap+1 {
				t.Fatalf("%v: window %d above cwnd_gain·BDP + 3 quanta = %.0f", now, b.Window(), cap)
			}
			if now > 2*time.Second && now < 5*time.Second {
				queueSum += rtt.Latest - prop(now)
				queueN++
			}
		}
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
	// Pacing at BtlBw keeps the queue short: v1's three send quanta of
	// inflight headroom (6 packets, 7.2 ms here) stand, and the 1.25 phase
	// adds up to a quarter BDP (12.5 ms) for one phase in eight, which the
	// 0.75 phase drains.
	if queueN == 0 || queueSum/time.Duration(queueN) > 12*ms {
		t.Errorf("mean queueing delay in ProbeBW %v over %d samples, want ≤ 12 ms", queueSum/time.Duration(max(queueN, 1)), queueN)
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
	const bw, rtProp = 1e6, 50 * time.Millisecond // BDP 50 000 B
	b.state, b.rtProp, b.filledPipe, b.pacingRate = BBRProbeBW, rtProp, true, bw
	b.bwSamples[0] = bw
	b.enterProbeBW(0)
	// Each phase lasts one RTprop; the probe phase ends only once its
	// inflight (1.25·BDP + 3 quanta) was reached, which prior gives here.
	var gains []float64
	for i := 0; i < 8; i++ {
		gains = append(gains, b.PacingGain())
		b.checkCyclePhase(time.Duration(i+1)*51*time.Millisecond, b.inflightTarget(b.PacingGain()))
	}
	// Starts cruising (index 2), then 1,1,1,1,1, probe 1.25, drain 0.75.
	want := []float64{1, 1, 1, 1, 1, 1, 1.25, 0.75}
	for i := range want {
		if gains[i] != want[i] {
			t.Fatalf("gain cycle %v, want %v", gains, want)
		}
	}
	// Send quantum at 1 MB/s (8 Mbit/s): 2 packets.
	if got, want := b.inflightTarget(1.25), 1.25*50000+3*2*mss; got != want {
		t.Errorf("probe inflight %v, want %v", got, want)
	}
	b.cycleIdx, b.cycleStamp = 0, time.Second
	b.checkCyclePhase(time.Second+60*time.Millisecond, 50000)
	if b.PacingGain() != 1.25 {
		t.Error("the probe phase ended before its inflight was reached")
	}
	b.lostSinceAck = true
	b.checkCyclePhase(time.Second+61*time.Millisecond, 50000)
	if b.PacingGain() != 0.75 {
		t.Error("the probe phase did not end on a loss")
	}
	b.lostSinceAck = false
	b.checkCyclePhase(time.Second+62*time.Millisecond, 50000)
	if b.PacingGain() != 1 {
		t.Error("the drain phase did not end at one BDP of inflight")
	}
	// The pacer carries the gain; the window is capped at 2·BDP + 3 quanta.
	b.cwnd = 1 << 20
	b.cycleIdx, b.cycleStamp = 0, 2*time.Second
	b.OnPacketSent(2*time.Second, mss, 40*mss)
	b.OnAck(2*time.Second+10*time.Millisecond, mss, 2*time.Second, RTT{Latest: 60 * time.Millisecond})
	if got, want := b.PacingRate(0), 1.25*b.BtlBw(); got != want {
		t.Errorf("pacing rate %v in the probe phase, want 1.25·BtlBw = %v", got, want)
	}
	if got, want := b.Window(), int(2*50000+3*2*mss); got != want {
		t.Errorf("window %d, want cwnd_gain·BDP + 3 quanta = %d", got, want)
	}
}
