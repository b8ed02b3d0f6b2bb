// Package progress shows what a long piece of work is doing: how far it is
// (k of n), the time it has taken and an estimate of what is left. On a
// terminal it is one line redrawn in place (at least once a second, so the
// clock moves while a long job runs); into a pipe or a file it is plain
// lines, a few over the whole work and one at least every Heartbeat, so a
// log shows the work is alive. The clock is injected (Options.Now) so that
// tests need no real time.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Heartbeat is the longest a piped progress goes without a line: long
// enough not to flood a log, short enough that a reader of a CI log sees
// the work is alive.
const Heartbeat = 30 * time.Second

// plainLines is about how many step lines a piped progress prints over the
// whole work, whatever its size.
const plainLines = 20

// Redraw is how often a terminal line is redrawn while nothing finishes.
const Redraw = time.Second

// Bar reports the progress of n steps to a writer.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	name     string
	n        int
	tty      bool
	now      func() time.Time
	start    time.Time
	lastLine time.Time // when the last plain line was printed
	done     int
	label    string
	drawn    bool // a terminal line is on screen
}

// Options configure a Bar.
type Options struct {
	// TTY redraws one line in place; false prints plain lines.
	TTY bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// New starts a bar for n steps named name ("" for none).
func New(w io.Writer, name string, n int, opt Options) *Bar {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	t := now()
	return &Bar{w: w, name: name, n: n, tty: opt.TTY, now: now, start: t, lastLine: t}
}

// IsTerminal reports whether w is a character device (a terminal), where a
// line may be redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Step records that done of the n steps have finished, the last one
// described by label ("" for none), and prints what the output wants.
func (b *Bar) Step(done int, label string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done, b.label = done, label
	if b.tty {
		b.draw()
		return
	}
	every := max(1, b.n/plainLines)
	if label != "" || done%every == 0 || done == b.n {
		b.plain()
	}
}

// Tick is called periodically while the work runs (Redraw): a terminal line
// gets its clock moved, a piped one a heartbeat line after Heartbeat of
// silence.
func (b *Bar) Tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.tty:
		b.draw()
	case b.now().Sub(b.lastLine) >= Heartbeat:
		b.plain()
	}
}

// Finish ends a terminal line (the next output starts on a line of its
// own); a piped bar has nothing to end.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}

func (b *Bar) draw() {
	fmt.Fprintf(b.w, "\r\x1b[K%s", b.line(b.now()))
	b.drawn = true
}

func (b *Bar) plain() {
	t := b.now()
	fmt.Fprintln(b.w, b.line(t))
	b.lastLine = t
}

// line is "name: 5/20 runs (label), 12 s elapsed, about 36 s left" at t.
func (b *Bar) line(t time.Time) string {
	return Line(b.name, b.done, b.n, t.Sub(b.start), b.label)
}

// Line formats one progress line; the estimate assumes the steps left take
// as long as those done did, on average (none before the first step).
func Line(name string, done, n int, elapsed time.Duration, label string) string {
	var s strings.Builder
	if name != "" {
		s.WriteString(name + ": ")
	}
	fmt.Fprintf(&s, "%d/%d runs", done, n)
	if label != "" {
		s.WriteString(" (" + label + ")")
	}
	fmt.Fprintf(&s, ", %s elapsed", Duration(elapsed))
	switch {
	case done >= n:
	case done > 0:
		left := time.Duration(float64(elapsed) / float64(done) * float64(n-done))
		fmt.Fprintf(&s, ", about %s left", Duration(left))
	default:
		s.WriteString(", estimate after the first run")
	}
	return s.String()
}

// Duration is d rounded for a reader: "0.4 s", "12 s", "3 min 05 s", "1 h 02 min".
func Duration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%d min %02d s", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%d h %02d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
