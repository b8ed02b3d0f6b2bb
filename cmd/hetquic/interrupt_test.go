package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// interruptCase is one long-running command that Ctrl-C must stop: its
// arguments (OUT stands for a fresh directory; without --out it runs in an
// empty one) and the stderr text that says it has started its work, after
// which the signal goes.
type interruptCase struct {
	name   string
	args   []string
	header string
	// server: Ctrl-C is how it is stopped, so it ends cleanly (exit 0,
	// its logs flushed) rather than as an interrupted run (130).
	server bool
}

// interruptCases are the commands that run long, each made long enough that
// the signal lands inside one run (a single seed, one worker, a long
// simulated duration): a command that only checked for Ctrl-C between runs
// would run on for minutes and time the test out.
var interruptCases = []interruptCase{
	{"exp run offline", []string{"exp", "run", "pcm-table5", "--seeds", "10000", "--out", "OUT"}, "experiment pcm-table5", false},
	{"exp run, own directory", []string{"exp", "run", "pcm-table5", "--seeds", "10000"}, "writing to", false},
	{"exp run sim", []string{"exp", "run", "sim-urban", "--seeds", "1", "--workers", "1", "--set", "duration_s=100000", "--set", "app.size_mb=100000", "--out", "OUT"}, "writing to", false},
	{"sim run", []string{"sim", "run", "sim-urban", "--seeds", "1", "--workers", "1", "--set", "duration_s=100000", "--set", "app.size_mb=100000", "--out", "OUT"}, "writing to", false},
	{"exp run video", []string{"exp", "run", "qcmab-fig4-9", "--seeds", "1", "--workers", "1", "--set", "duration_s=3600", "--out", "OUT"}, "writing to", false},
	{"exp run sweep", []string{"exp", "run", "sweep-wifi-loss", "--seeds", "1", "--workers", "1", "--set", "duration_s=100000", "--set", "app.size_mb=100000", "--out", "OUT"}, "writing to", false},
	{"ride eval", []string{"ride", "eval", "--workers", "1", "--out", "OUT"}, "ride eval:", false},
	{"emu relay", []string{"emu", "relay", "--delay", "5ms", "--rate", "10mbit", "--server", "127.0.0.1:9", "--paths", "127.0.0.1", "--listen", "127.0.0.1:0"}, "relaying", true},
}

// measureInterruptEnv, when set, makes TestInterrupt run its cases one at
// a time and print a Markdown table of the time from SIGINT to exit (the
// measured block in docs/cli.md); the test asserts no time either way.
const measureInterruptEnv = "HETQUIC_INTERRUPT_MEASURE"

// Ctrl-C stops every long command, inside a run too: it says "hetquic:
// interrupted" last, exits 130 and leaves no results that look complete (no
// summary.json or report.md in --out, no results/NAME/RUN of its own). The signal goes once the command has
// said it started, not after a sleep that a loaded machine may outlast
// before main installs its handler.
func TestInterrupt(t *testing.T) {
	measure := os.Getenv(measureInterruptEnv) != ""
	took := make([]time.Duration, len(interruptCases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range interruptCases {
			t.Run(c.name, func(t *testing.T) {
				if !measure {
					t.Parallel()
				}
				took[i] = interrupt(t, c)
			})
		}
	})
	if measure && !t.Failed() {
		fmt.Println("| what | command | SIGINT to exit |\n|---|---|---|")
		for i, c := range interruptCases {
			fmt.Printf("| %s | `hetquic %s` | %.0f ms |\n", c.name, strings.Join(c.args, " "), took[i].Seconds()*1000)
		}
	}
}

// interrupt runs c, sends SIGINT after its header, checks how it ended and
// returns the time from the signal to its exit.
func interrupt(t *testing.T, c interruptCase) time.Duration {
	out := filepath.Join(t.TempDir(), "out")
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "OUT", out)
	}
	cmd := exec.Command(hetquicBin, args...)
	cmd.Dir = t.TempDir() // where a run without --out makes results/NAME/RUN
	var errb lockedBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var sent time.Time
	err, early := errb.waitLineOrExit(c.header, exited)
	if !early {
		sent = time.Now()
		cmd.Process.Signal(os.Interrupt)
		err = <-exited
	}
	took := time.Since(sent)
	if early {
		t.Fatalf("hetquic %s ended before it said %q: %v\n%s", strings.Join(args, " "), c.header, err, errb.String())
	}
	if c.server {
		if err != nil {
			t.Fatalf("hetquic %s after SIGINT: %v, stderr %q; want a clean stop (exit 0)", strings.Join(args, " "), err, errb.String())
		}
		return took
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || lines[len(lines)-1] != "hetquic: interrupted" {
		t.Fatalf("hetquic %s after SIGINT: %v, stderr %q; want exit 130 and hetquic: interrupted last", strings.Join(args, " "), err, errb.String())
	}
	for _, f := range []string{"summary.json", "report.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("an interrupted run left %s in %s, as if it had finished", f, out)
		}
	}
	if runs, _ := filepath.Glob(filepath.Join(cmd.Dir, "results", "*", "*")); len(runs) > 0 {
		t.Errorf("an interrupted run left %v: its own directory (or a latest link to it)", runs)
	}
	return took
}

// Without a signal a cancelled context is an error like any other (1) and
// bad input is 2: only a signal makes 130.
func TestExitCodes(t *testing.T) {
	if exitCode(context.Canceled, false, &bytes.Buffer{}) != 1 || exitCode(badInput(errors.New("x")), false, &bytes.Buffer{}) != 2 {
		t.Error("exit codes without a signal are not 1 and 2")
	}
	if exitCode(context.Canceled, true, &bytes.Buffer{}) != 130 {
		t.Error("a signal's exit code is not 130")
	}
}

// waitLineOrExit blocks until the buffer holds a whole line containing s
// (early false) or the process has exited first (early true, with its
// Wait error), so that a command refusing its arguments fails the test at
// once instead of at the event deadline.
func (l *lockedBuffer) waitLineOrExit(s string, exited <-chan error) (err error, early bool) {
	for {
		l.mu.Lock()
		if _, after, ok := strings.Cut(l.b.String(), s); ok && strings.Contains(after, "\n") {
			l.mu.Unlock()
			return nil, false
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case err := <-exited:
			return err, true
		}
	}
}
