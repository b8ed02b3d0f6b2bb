package pcm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// logCount counts the log lines that contain a string.
type logCount struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCount) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *logCount) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// TestProbesOnByDefault: with two or more paths and the default selector
// the side probes run on their own (they cost bytes: Stats.ProbeBytes);
// with Probes.Off, or one path, they do not.
func TestProbesOnByDefault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths int
		cfg   Config
		want  bool
	}{
		{"default", 3, Config{}, true},
		{"off", 3, Config{Probes: Probes{Off: true}}, false},
		{"one path", 1, Config{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				c := memDial(t, n, tc.paths, tc.cfg)
				if _, err := c.Get(context.Background(), "/bytes/10", nil); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Second)
				if got := c.Stats().ProbeBytes > 0; got != tc.want {
					t.Errorf("probes ran: %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestProbeTargetNotFound: a probe target the server answers 404 turns the
// probes off with one warning, and requests go on unharmed.
func TestProbeTargetNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		logs := &logCount{}
		c := memDial(t, n, 3, Config{Probes: Probes{Target: "/no/such/thing"}, Logf: logs.logf})
		for range 20 {
			if _, err := c.Get(context.Background(), "/bytes/10", nil); err != nil {
				t.Fatalf("a request failed while probes misfired: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if got := logs.count("side probes off"); got != 1 {
			t.Errorf("%d warnings that probes are off, want 1: %q", got, logs.lines)
		}
	})
}

// TestProbeBringsPathBack: a path that stalled is down until a side probe
// answers on it again; no request is sent into it meanwhile.
func TestProbeBringsPathBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{Selector: nil})
		ctx := context.Background()
		for _, p := range []int{1, 2, 0} {
			if _, err := c.GetOn(ctx, p, "/bytes/10", nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second) // the server's new connection IDs arrive
		n.SetDrop(memPath(0), true)
		if res, err := c.GetOn(ctx, 0, "/bytes/1000", nil); err != nil || res.Failovers != 1 {
			t.Fatalf("request across the cut: %+v, %v", res, err)
		}
		if !c.Resting()[0] {
			t.Fatal("path 0 not down after it stalled")
		}
		time.Sleep(10 * time.Second)
		if !c.Resting()[0] {
			t.Fatal("path 0 back while it still drops everything")
		}
		n.SetDrop(memPath(0), false)
		time.Sleep(2 * time.Minute) // the longest rest, and a probe round
		if c.Resting()[0] {
			t.Error("path 0 still down after it recovered and probes ran")
		}
	})
}
