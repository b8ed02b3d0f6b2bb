package emu

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/leakcheck"
	"github.com/hetquic/hetquic/scenario"
)

// TestControlRanges: the control API refuses values no link has (1e308 ms
// of delay would overflow to about zero), naming the field.
func TestControlRanges(t *testing.T) {
	for _, tc := range []struct {
		patch, want string
	}{
		{"{down: {delay_ms: 1e308}}", "down.delay_ms: 1e+308 is more than"},
		{"{up: {jitter_ms: 4e6}}", "up.jitter_ms"},
		{"{both: {rate_mbps: 1e-9}}", "up.rate_mbps: 1e-09 is outside"},
		{"{down: {rate_mbps: 1e12}}", "down.rate_mbps"},
		{"{down: {queue_packets: 100000000}}", "down.queue_packets"},
		{"{down: {queue_bytes: -1}}", "down.queue_bytes"},
		{"{down: {delay_ms: -1}}", "delay_ms: -1 must be a finite number"},
		{"{down: {delay_ms: .nan}}", "must be a finite number"},
		{"{sideways: {delay_ms: 1}}", "unknown key"},
	} {
		_, err := ParseControlPatch(tc.patch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.patch, err, tc.want)
		}
	}
	for _, ok := range []string{"{down: {delay_ms: 3600000}}", "{both: {rate_mbps: 0}}", "{up: {rate_mbps: 0.001, loss: 0.5}}"} {
		if _, err := ParseControlPatch(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for q, want := range map[string]time.Duration{"s=2": 2 * time.Second, "s=86400": 24 * time.Hour, "s=0.5": 500 * time.Millisecond} {
		if d, err := ParseOutageQuery(q); err != nil || d != want {
			t.Errorf("%s: %v, %v, want %v", q, d, err, want)
		}
	}
	for _, q := range []string{"s=0", "s=-1", "s=NaN", "s=Inf", "s=1e308", "s=86401", "s=1e-12", "", "s=%zz"} {
		if _, err := ParseOutageQuery(q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
}

// FuzzParseControlPatch: an accepted patch sets only values within the
// control API's ranges.
func FuzzParseControlPatch(f *testing.F) {
	for _, s := range []string{"{down: {delay_ms: 60}}", "{both: {rate_mbps: 2.5, loss: 0.01, queue_packets: 64}}",
		"{up: {gilbert_elliott: {p_good_bad: 0.01, p_bad_good: 0.3, loss_bad: 0.5}}}", "{down: {delay_ms: 1e308}}", "[1, 2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseControlPatch(text)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		np, err := p.Apply(zeroPath)
		if err != nil {
			t.Fatalf("accepted, then Apply: %v", err)
		}
		for _, l := range []struct{ d, j, r float64 }{{np.Up.DelayMs, np.Up.JitterMs, np.Up.RateMbps}, {np.Down.DelayMs, np.Down.JitterMs, np.Down.RateMbps}} {
			if !(l.d >= 0 && l.d <= MaxDelayMs) || !(l.j >= 0 && l.j <= MaxDelayMs) || !(l.r == 0 || l.r >= MinRateMbps && l.r <= MaxRateMbps) {
				t.Fatalf("accepted out of range: %+v", np)
			}
		}
	})
}

// FuzzParseOutageQuery: an accepted outage lasts (0, one day].
func FuzzParseOutageQuery(f *testing.F) {
	for _, s := range []string{"s=2", "s=0.001", "s=1e308", "s=-0", "s=2&s=3", "s=0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		d, err := ParseOutageQuery(q)
		if err == nil && (d <= 0 || d > MaxOutageS*time.Second) {
			t.Fatalf("%q → %v", q, d)
		}
	})
}

var zeroPath = scenario.Path{}

// TestServeControlFailedServeEnds: a Serve that fails (a closed listener)
// returns its error and leaves no goroutine behind, though its context is
// never cancelled.
func TestServeControlFailedServeEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ServeControl(ctx, ln, http.NotFoundHandler()); err == nil {
		t.Fatal("ServeControl on a closed listener returned nil")
	}
	if n, _ := leakcheck.Wait(before, time.Second); n > before {
		t.Errorf("%d goroutines after a failed Serve, %d before", n, before)
	}
}
