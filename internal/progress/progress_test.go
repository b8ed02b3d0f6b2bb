package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock is a fake clock moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLineEstimate(t *testing.T) {
	for _, tc := range []struct {
		done, n int
		elapsed time.Duration
		label   string
		want    string
	}{
		{0, 4, 3 * time.Second, "", "sim: 0/4 runs, 3.0 s elapsed, estimate after the first run"},
		{1, 4, 20 * time.Second, "", "sim: 1/4 runs, 20 s elapsed, about 1 min 00 s left"},
		{3, 4, 90 * time.Second, "MAMS", "sim: 3/4 runs (MAMS), 1 min 30 s elapsed, about 30 s left"},
		{4, 4, 2 * time.Hour, "", "sim: 4/4 runs, 2 h 00 min elapsed"},
	} {
		if got := Line("sim", tc.done, tc.n, tc.elapsed, tc.label); got != tc.want {
			t.Errorf("Line(%d/%d, %v) = %q, want %q", tc.done, tc.n, tc.elapsed, got, tc.want)
		}
	}
}

// Piped: about twenty step lines, and a heartbeat after Heartbeat of
// silence but not before.
func TestPlainLinesAndHeartbeat(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	bar := New(&b, "x", 40, Options{Now: c.now})
	for i := 1; i <= 10; i++ {
		c.t = c.t.Add(time.Second)
		bar.Step(i, "")
	}
	if got := strings.Count(b.String(), "\n"); got != 5 {
		t.Fatalf("%d lines for 10 of 40 steps, want 5: %q", got, b.String())
	}
	b.Reset()
	c.t = c.t.Add(Heartbeat - 3*time.Second)
	bar.Tick()
	if b.Len() != 0 {
		t.Fatalf("a heartbeat before %v of silence: %q", Heartbeat, b.String())
	}
	c.t = c.t.Add(3 * time.Second)
	bar.Tick()
	if want := "x: 10/40 runs, 40 s elapsed, about 2 min 00 s left\n"; b.String() != want {
		t.Fatalf("heartbeat %q, want %q", b.String(), want)
	}
}

// On a terminal: one line redrawn in place (carriage return, erase), the
// clock moving on every tick, and a newline at the end.
func TestTerminalRedraw(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	bar := New(&b, "x", 2, Options{TTY: true, Now: c.now})
	c.t = c.t.Add(2 * time.Second)
	bar.Tick()
	c.t = c.t.Add(2 * time.Second)
	bar.Step(1, "")
	bar.Finish()
	want := "\r\x1b[Kx: 0/2 runs, 2.0 s elapsed, estimate after the first run" +
		"\r\x1b[Kx: 1/2 runs, 4.0 s elapsed, about 4.0 s left\n"
	if b.String() != want {
		t.Fatalf("terminal output %q, want %q", b.String(), want)
	}
	if IsTerminal(&b) {
		t.Fatal("a buffer is not a terminal")
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond:           "0.4 s",
		12 * time.Second:                 "12 s",
		185 * time.Second:                "3 min 05 s",
		time.Hour + 2*time.Minute + 10e9: "1 h 02 min",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
