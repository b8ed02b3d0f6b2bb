package runner

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/scenario"
)

// The sender trace (stripe and matrix --sender-trace) says, per path, what
// kept its link idle during the measured striped transfer. The relay's
// link model is virtual-time (emu: a packet's departure is fixed when it
// arrives), so its down queue, read every traceTick, is empty exactly when
// the link is idle and the capacity of that time is lost; each idle tick is
// then charged to one cause, from ct-server's QUIC sender for that path
// (quic-go's recovery metrics: congestion window and bytes in flight; its
// DATA_BLOCKED and STREAM_DATA_BLOCKED frames) at that moment — ct-server
// reaches the relay over loopback, so what it sends enters the queue at
// once:
//
//   - pause: the tick came late (more than traceLate after the last): the
//     process, whose relay, ct-server and ct-client share the two cores,
//     did not run, so the sender could not refill the queue;
//   - blocked: ct-server sent a BLOCKED frame on the path's connection in
//     the tick: a receive window (ct-client's) held it;
//   - cwnd: the bytes in flight reached the congestion window (within
//     cwndSlack): quic-go's congestion control held it;
//   - app: the sender had room and nothing to send: the stripe had no
//     piece on the path, or ct-server's handler had not written it yet.
//
// Ticks before the path's first byte of the transfer entered the link
// (head: the request's round trip, the stripe's start) and after its last
// (tail) are counted apart. The idle shares need not add up to what the
// goodput lacks: a busy link's bytes may reach the app late (the relay
// releases them when the process runs) or twice (the stripe's copies).
// Session 32 (cwnd32) traced the halving row's low draws this way to tell
// the transport's limits from the stripe's and the machine's.
const (
	traceTick = 5 * time.Millisecond
	traceLate = 2 * traceTick
	// cwndSlack is how close to the congestion window the bytes in flight
	// count as window-limited: quic-go's own test (isCwndLimited) allows
	// three full packets of room.
	cwndSlack = 3 * 1252
)

// senderTraceNote begins each of the trace's notes.
const senderTraceNote = "sender trace, "

// senderTrace records ct-server's QUIC senders (its Tracer) and, between
// begin and end, the relay's down links.
type senderTrace struct {
	t0 time.Time

	mu    sync.Mutex
	conns []*connTrace

	ticks   []linkTick
	stop    chan struct{}
	stopped chan struct{}
}

// connTrace is one ct-server connection's sender, times from t0.
type connTrace struct {
	mu      sync.Mutex
	remote  netip.AddrPort // the relay's flow socket: names the path
	metrics []cwndSample
	blocked []time.Duration
	lost    []time.Duration
	// state is the sender's congestion state, application_limited aside
	// (quic-go flips to it and back on every ACK that finds room);
	// delayExits are the congestion windows at which it left slow start
	// for congestion avoidance without a loss: quic-go's hybrid slow start
	// saw the round trip grow by an eighth (4–16 ms) and took the window
	// then for its threshold, so from there it grows by one packet per
	// round trip.
	state      qlog.CongestionState
	delayExits []int
}

type cwndSample struct {
	at             time.Duration
	cwnd, inFlight int
}

// linkTick is the relay's down links at one moment.
type linkTick struct {
	at     time.Duration
	queued []int    // per path: bytes in the rate limiter's queue
	in     []uint64 // per path: bytes that entered the link so far
}

func newSenderTrace() *senderTrace { return &senderTrace{t0: time.Now()} }

// quicConfig is ct-server's QUIC configuration with the trace's Tracer.
func (st *senderTrace) quicConfig() *quic.Config {
	return &quic.Config{Tracer: func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
		c := &connTrace{}
		st.mu.Lock()
		st.conns = append(st.conns, c)
		st.mu.Unlock()
		return traceOf{st.t0, c}
	}}
}

// traceOf is one connection's qlogwriter.Trace and Recorder: it keeps the
// few events the trace needs, in memory, and drops the rest unencoded.
type traceOf struct {
	t0 time.Time
	c  *connTrace
}

func (t traceOf) AddProducer() qlogwriter.Recorder { return t }
func (t traceOf) Close() error                     { return nil }

func (t traceOf) RecordEvent(ev qlogwriter.Event) {
	at := time.Since(t.t0)
	c := t.c
	switch e := ev.(type) {
	case qlog.StartedConnection:
		c.mu.Lock()
		c.remote = e.Remote.IPv4
		if !c.remote.IsValid() {
			c.remote = e.Remote.IPv6
		}
		c.mu.Unlock()
	case qlog.MetricsUpdated: // a full snapshot: quic-go copies its last one
		c.mu.Lock()
		c.metrics = append(c.metrics, cwndSample{at, e.CongestionWindow, e.BytesInFlight})
		c.mu.Unlock()
	case qlog.PacketLost:
		c.mu.Lock()
		c.lost = append(c.lost, at)
		c.mu.Unlock()
	case qlog.CongestionStateUpdated:
		if e.State == qlog.CongestionStateApplicationLimited {
			return
		}
		c.mu.Lock()
		if c.state == qlog.CongestionStateSlowStart && e.State == qlog.CongestionStateCongestionAvoidance && len(c.metrics) > 0 {
			c.delayExits = append(c.delayExits, c.metrics[len(c.metrics)-1].cwnd)
		}
		c.state = e.State
		c.mu.Unlock()
	case qlog.PacketSent:
		for _, f := range e.Frames {
			switch f.Frame.(type) {
			case *qlog.DataBlockedFrame, *qlog.StreamDataBlockedFrame:
				c.mu.Lock()
				c.blocked = append(c.blocked, at)
				c.mu.Unlock()
			}
		}
	}
}

// begin starts reading eng's down links every traceTick until end.
func (st *senderTrace) begin(eng *emu.Engine) {
	st.stop, st.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(st.stopped)
		tk := time.NewTicker(traceTick)
		defer tk.Stop()
		for {
			lt := linkTick{at: time.Since(st.t0)}
			for _, p := range eng.Stats() {
				lt.queued = append(lt.queued, p.Down.QueuedBytes)
				lt.in = append(lt.in, p.Down.BytesIn)
			}
			st.ticks = append(st.ticks, lt)
			select {
			case <-st.stop:
				return
			case <-tk.C:
			}
		}
	}()
}

// end stops the link reads begin started.
func (st *senderTrace) end() {
	close(st.stop)
	<-st.stopped
}

// idleCauses is one path's idle link time over a transfer, by cause, in
// the bytes the link could have carried meanwhile, and offered: what it
// could have carried over the whole transfer.
type idleCauses struct {
	head, tail, pause, blocked, cwnd, app float64
	offered                               float64
	minCwnd                               int // the least congestion window seen in the transfer (0: none)
	lost                                  int // packets quic-go declared lost in the transfer
}

// senderLog is a snapshot of one connection's trace.
type senderLog struct {
	metrics       []cwndSample
	blocked, lost []time.Duration
	delayExits    []int
}

// attribute charges path i's idle ticks to their causes. offered is what
// the path's link carries between two times from the transfer's start
// (its rate changes with the scenario's events); senders are the path's
// connections.
func attribute(ticks []linkTick, i int, offered func(from, to time.Duration) float64, senders []senderLog) idleCauses {
	var ic idleCauses
	if len(ticks) < 2 {
		return ic
	}
	t0 := ticks[0].at
	ic.countSenders(senders, t0, ticks[len(ticks)-1].at)
	first, last := entered(ticks, i)
	for k := 0; k+1 < len(ticks); k++ {
		a, b := ticks[k], ticks[k+1]
		bytes := offered(a.at-t0, b.at-t0)
		ic.offered += bytes
		switch {
		case first < 0 || k < first:
			ic.head += bytes
		case k >= last:
			ic.tail += bytes
		case a.queued[i] > 0:
		case b.at-a.at > traceLate:
			ic.pause += bytes
		case blockedIn(senders, a.at, b.at):
			ic.blocked += bytes
		case cwndFull(senders, a.at, b.at):
			ic.cwnd += bytes
		default:
			ic.app += bytes
		}
	}
	return ic
}

// entered is the span of ticks in which bytes entered path i's link: the
// tick before the first rise of its count and the tick of the last (-1,
// -1: none entered).
func entered(ticks []linkTick, i int) (first, last int) {
	first, last = -1, -1
	for k := 1; k < len(ticks); k++ {
		if ticks[k].in[i] > ticks[k-1].in[i] {
			if first < 0 {
				first = k - 1
			}
			last = k
		}
	}
	return first, last
}

// countSenders sets ic's least congestion window and lost packets from
// the senders' records in [t0, t1].
func (ic *idleCauses) countSenders(senders []senderLog, t0, t1 time.Duration) {
	for _, c := range senders {
		for _, m := range c.metrics {
			if m.at >= t0 && m.at <= t1 && (ic.minCwnd == 0 || m.cwnd < ic.minCwnd) {
				ic.minCwnd = m.cwnd
			}
		}
		for _, l := range c.lost {
			if l >= t0 && l <= t1 {
				ic.lost++
			}
		}
	}
}

// blockedIn says whether some sender sent a BLOCKED frame in [from, to].
func blockedIn(senders []senderLog, from, to time.Duration) bool {
	for _, c := range senders {
		k := sort.Search(len(c.blocked), func(j int) bool { return c.blocked[j] >= from })
		if k < len(c.blocked) && c.blocked[k] <= to {
			return true
		}
	}
	return false
}

// cwndFull says whether some sender's bytes in flight reached its
// congestion window in [from, to], counting the snapshot that stood at
// from: any snapshot of the span, since each ACK's snapshot dips before
// the sends it allows.
func cwndFull(senders []senderLog, from, to time.Duration) bool {
	for _, c := range senders {
		ms := c.metrics
		k := sort.Search(len(ms), func(j int) bool { return ms[j].at > from })
		for j := max(k-1, 0); j < len(ms) && ms[j].at <= to; j++ {
			if ms[j].inFlight > 0 && ms[j].inFlight >= ms[j].cwnd-cwndSlack {
				return true
			}
		}
	}
	return false
}

// snapshot copies c's trace (its connection may still be running).
func (c *connTrace) snapshot() (netip.AddrPort, senderLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remote, senderLog{append([]cwndSample(nil), c.metrics...), append([]time.Duration(nil), c.blocked...), append([]time.Duration(nil), c.lost...),
		append([]int(nil), c.delayExits...)}
}

// notes are the trace's lines for the striped mode: per path with a rate
// limit, its idle link time by cause (attribute), its sender's least
// congestion window against the path's bandwidth-delay product and the
// windows at which its connections left slow start without a loss
// (delayExitsText). relay names each connection's path.
func (st *senderTrace) notes(sc *scenario.Scenario, relay *udprelay.Relay) []string {
	st.mu.Lock()
	conns := append([]*connTrace(nil), st.conns...)
	st.mu.Unlock()
	byPath := make([][]senderLog, len(sc.Paths))
	for _, c := range conns {
		remote, log := c.snapshot()
		if p, ok := relay.FlowPath(remote); ok {
			byPath[p] = append(byPath[p], log)
		}
	}
	var out []string
	for i, p := range sc.Paths {
		offered := func(from, to time.Duration) float64 {
			return offeredBytes(sc, p, to.Seconds()) - offeredBytes(sc, p, from.Seconds())
		}
		ic := attribute(st.ticks, i, offered, byPath[i])
		if ic.offered == 0 {
			continue
		}
		rtt := p.Up.MeanDelayMs() + p.Down.MeanDelayMs()
		bdp := p.Down.RateMbps * 1e6 / 8 * rtt / 1e3
		pct := func(v float64) float64 { return 100 * v / ic.offered }
		exits := delayExitsText(byPath[i])
		out = append(out, fmt.Sprintf(senderTraceNote+"%s: link idle for %.0f %% of its capacity over the transfer: head %.0f, tail %.0f, process paused %.0f, "+
			"flow-control blocked %.0f, congestion window full %.0f, sender had nothing to send %.0f; least congestion window %.0f kB (bandwidth-delay product %.0f kB), %d packets lost; "+
			"slow start left on a round-trip rise without loss (quic-go's hybrid slow start) %s",
			p.Name, pct(ic.head+ic.tail+ic.pause+ic.blocked+ic.cwnd+ic.app), pct(ic.head), pct(ic.tail), pct(ic.pause),
			pct(ic.blocked), pct(ic.cwnd), pct(ic.app), float64(ic.minCwnd)/1e3, bdp/1e3, ic.lost, exits))
	}
	return out
}

// maxListedExits is how many hybrid-slow-start exits a path's note lists
// one by one. Each of the path's connections (ct-client's lanes, at most
// wire.MaxLanes) leaves slow start once, unless a loss ends it first, so
// a path normally lists them all; more means a connection fell back into
// slow start (quic-go does after persistent congestion).
const maxListedExits = wire.MaxLanes

// delayExitsText says at which congestion windows the path's connections
// (logs) left slow start without a loss: "never", or each window, by
// connection in the order they opened, then in time. A reader compares
// them with the path's bandwidth-delay product to see whether a lane's
// slow start ended early and held the sender, so every lane's exit
// counts, not the last one's. Past maxListedExits the note gives their
// number and the least and the most: the least is the one that held a
// lane lowest, and with lanes side by side the order says little.
func delayExitsText(logs []senderLog) string {
	var all []int
	for _, l := range logs {
		all = append(all, l.delayExits...)
	}
	kB := func(w int) string { return fmt.Sprintf("%.0f kB", float64(w)/1e3) }
	switch {
	case len(all) == 0:
		return "never"
	case len(all) > maxListedExits:
		return fmt.Sprintf("%d times, at %s the least, %s the most", len(all), kB(slices.Min(all)), kB(slices.Max(all)))
	}
	parts := make([]string, len(all))
	for i, w := range all {
		parts[i] = kB(w)
	}
	return "at " + strings.Join(parts, ", ")
}
