package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/qlog"

	"github.com/hetquic/hetquic/scenario"
)

// TestAttributeIdleCauses charges each idle tick of a synthetic trace to
// its one cause: before the first byte (head), a late tick (pause), a
// BLOCKED frame, a full congestion window, a sender with room and nothing
// to send (app), after the last byte (tail); a tick with bytes queued is
// busy. A classifier that charges every idle tick to one cause (all
// "app", or all "cwnd", as "the transport is slow" would) fails, as does
// one that reads the congestion window only at the span's ends (an ACK's
// dip may stand there) or ignores late ticks.
func TestAttributeIdleCauses(t *testing.T) {
	ms := time.Millisecond
	// Path 1 of two; path 0 is always busy and must not matter.
	type tk struct {
		at     time.Duration
		queued int
		in     uint64
	}
	script := []tk{
		{0, 0, 0},          // [0,5) head: nothing enters
		{5 * ms, 0, 0},     // [5,10) the first bytes enter; idle, room in the window: app
		{10 * ms, 300, 10}, // [10,15) queued: busy
		{15 * ms, 900, 20}, // [15,20) queued: busy
		{20 * ms, 0, 30},   // [20,25) idle, window full mid-span (22 ms) only
		{25 * ms, 0, 40},   // [25,40) idle and late: pause
		{40 * ms, 0, 50},   // [40,45) idle, BLOCKED sent
		{45 * ms, 0, 60},   // [45,50) idle, room in the window: app
		{50 * ms, 500, 70}, // [50,55) queued: busy; the last bytes enter
		{55 * ms, 0, 80},   // [55,60) tail
		{60 * ms, 0, 80},   // [60,65) tail
		{65 * ms, 0, 80},
	}
	var ticks []linkTick
	for _, s := range script {
		ticks = append(ticks, linkTick{at: s.at, queued: []int{7000, s.queued}, in: []uint64{uint64(s.at), s.in}})
	}
	sender := senderLog{
		metrics: []cwndSample{
			{19 * ms, 100_000, 80_000}, // stands at 20 ms: room
			{22 * ms, 100_000, 100_000},
			{24 * ms, 100_000, 90_000}, // an ACK's dip, standing at 25 ms
			{30 * ms, 100_000, 20_000},
			{46 * ms, 100_000, 20_000},
			{56 * ms, 90_000, 10_000},
		},
		blocked: []time.Duration{42 * ms},
		lost:    []time.Duration{3 * ms, 21 * ms},
	}
	perMs := func(from, to time.Duration) float64 { return float64((to - from) / ms) }
	got := attribute(ticks, 1, perMs, []senderLog{sender})
	want := idleCauses{head: 5, tail: 10, pause: 15, blocked: 5, cwnd: 5, app: 10, offered: 65, minCwnd: 90_000, lost: 2}
	if got != want {
		t.Errorf("attribute:\n got %+v\nwant %+v", got, want)
	}
}

// TestDelayExits records a slow start that ends without a loss (quic-go's
// hybrid slow start: slow_start → congestion_avoidance) at the window it
// ended at, through the application_limited flips between, and not the
// return to congestion avoidance after a loss's recovery.
func TestDelayExits(t *testing.T) {
	c := &connTrace{}
	rec := traceOf{time.Now(), c}
	cwnd := func(w int) { rec.RecordEvent(qlog.MetricsUpdated{CongestionWindow: w}) }
	state := func(s qlog.CongestionState) { rec.RecordEvent(qlog.CongestionStateUpdated{State: s}) }
	state(qlog.CongestionStateSlowStart)
	cwnd(40_000)
	state(qlog.CongestionStateApplicationLimited)
	cwnd(54_000)
	state(qlog.CongestionStateSlowStart)
	state(qlog.CongestionStateApplicationLimited)
	state(qlog.CongestionStateCongestionAvoidance) // the delay test's exit
	cwnd(60_000)
	state(qlog.CongestionStateRecovery)
	cwnd(42_000)
	state(qlog.CongestionStateCongestionAvoidance) // after a loss: not a delay exit
	if _, log := c.snapshot(); len(log.delayExits) != 1 || log.delayExits[0] != 54_000 {
		t.Errorf("delay exits %v, want [54000]", log.delayExits)
	}
}

// TestDelayExitsText: a path's note names every slow-start exit of its
// connections, not one: a note that keeps the last exit (as it once did)
// hides the lane whose early exit held the sender when another lane's
// came later, and one that keeps the first hides a later, lower one.
// Past maxListedExits it gives their number, the least and the most.
func TestDelayExitsText(t *testing.T) {
	exits := func(ws ...int) senderLog { return senderLog{delayExits: ws} }
	var many []senderLog
	for i := range maxListedExits + 1 {
		many = append(many, exits(100_000*(i+1)))
	}
	many[3] = exits(40_000)
	for _, tc := range []struct {
		name string
		logs []senderLog
		want string
	}{
		{"no connection", nil, "never"},
		{"no exit", []senderLog{exits(), exits()}, "never"},
		{"one lane", []senderLog{exits(54_000)}, "at 54 kB"},
		{"the early exit first", []senderLog{exits(310_000), exits(), exits(1_200_000)}, "at 310 kB, 1200 kB"},
		{"the early exit last", []senderLog{exits(1_200_000), exits(73_000)}, "at 1200 kB, 73 kB"},
		{"slow start again on one connection", []senderLog{exits(54_000, 120_000)}, "at 54 kB, 120 kB"},
		{"more than listed", many, fmt.Sprintf("%d times, at 40 kB the least, 900 kB the most", maxListedExits+1)},
	} {
		if got := delayExitsText(tc.logs); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStripeSenderTrace runs the stripe experiment with the sender trace
// on sockets: a note per path, each naming its path's connection (through
// the relay's flow) and its congestion window. What the notes say is the
// machine's and is not asserted.
func TestStripeSenderTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("two ct-client/ct-server pairs through the emulator (~15 s); runs without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	link := scenario.Link{DelayMs: 10, RateMbps: 20, QueueBytes: 125_000}
	sc := &scenario.Scenario{Name: "trace-test", Paths: []scenario.Path{
		{Name: "a", Up: scenario.Link{DelayMs: 10}, Down: link},
		{Name: "b", Up: scenario.Link{DelayMs: 10}, Down: link},
	}}
	_, notes, err := RunStripe(ctx, StripeConfig{Scenario: sc, Size: 3_000_000, SenderTrace: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		var found bool
		for _, n := range notes {
			if strings.HasPrefix(n, senderTraceNote+name+":") {
				found = true
				if strings.Contains(n, "least congestion window 0 kB") {
					t.Errorf("path %s: no congestion window traced (its connection not named?): %s", name, n)
				}
			}
		}
		if !found {
			t.Errorf("no sender trace note for path %s in %q", name, notes)
		}
	}
}
