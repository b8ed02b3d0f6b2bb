package pcm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// logCount collects a client's log lines, each after the (fake) time it
// was written, and counts those that contain given strings.
type logCount struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCount) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, time.Now().Format("15:04:05.000")+" "+strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// count is how many lines hold every one of subs.
func (l *logCount) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

func (l *logCount) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
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

// TestProbeTargetNotFound: a configured probe target the server answers
// 404 turns the probes off with one warning (the user named a resource
// the origin does not serve), and requests go on unharmed; the default
// target's 404 is a sample (TestProbesMeasureAnyOrigin).
func TestProbeTargetNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		logs := &logCount{}
		c := memDial(t, n, 3, Config{Probes: Probes{Target: "/no/such/thing"}, Logf: logs.logf})
		checkProbesOffOnce(t, c, logs, "/bytes/10", 20)
	})
}

// checkProbesOffOnce sends gets GETs of target through c, one every
// 500 ms, each of which must succeed while the probes misfire, and then
// wants exactly one warning in logs that the probes are off.
func checkProbesOffOnce(t *testing.T, c *Client, logs *logCount, target string, gets int) {
	t.Helper()
	for range gets {
		if _, err := c.Get(context.Background(), target, nil); err != nil {
			t.Fatalf("a request failed while probes misfired: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got := logs.count("side probes off"); got != 1 {
		t.Errorf("%d warnings that probes are off, want 1:\n%s", got, logs)
	}
}

// TestProbeBringsPathBack: a path that stalled is down until a side probe
// answers on it again; no request is sent into it meanwhile.
func TestProbeBringsPathBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{Selector: nil})
		ctx := context.Background()
		visitPaths(t, c, 1, 2, 0)
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

// TestProbesSweepAtStart: a Client with N paths asks a side probe of every
// idle path as it starts (the start-up sweep, pathsel.ProbeSchedule), and
// its first requests avoid a path whose probe is still out: path 5's
// probe (a handshake and a GET at 250 ms each way of delay) is out for
// about half a second, while the other paths' probes answer within tens
// of ms; in that half second requests go to the others, and path 5 is
// reached by its probe, not by a user's request. Fake time.
func TestProbesSweepAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const k, slow = 6, 5
		cfg := memConfig(t, n, k, Config{}, memServe(t, n, origin.Handler(nil), nil))
		for i, d := range []time.Duration{10, 5, 15, 20, 25, 250} {
			n.SetDelay(memPath(i), d*time.Millisecond)
		}
		c := dialConfig(t, cfg)
		synctest.Wait()
		out := pendingPaths(c.prober)
		if want := []int{1, 2, 3, 4, 5}; !slices.Equal(out, want) {
			t.Fatalf("probes out at the start: %v, want %v (every idle path)", out, want)
		}
		ctx := context.Background()
		start := time.Now()
		var chosen []int
		for time.Since(start) < 400*time.Millisecond {
			res, err := c.Get(ctx, "/bytes/1000", nil)
			if err != nil {
				t.Fatal(err)
			}
			chosen = append(chosen, res.Chosen)
			if res.Chosen == slow {
				t.Fatalf("request %d at %v went to path %d, whose probe was still out (chosen %v)",
					len(chosen), time.Since(start), slow, chosen)
			}
		}
		if !slices.ContainsFunc(chosen, func(p int) bool { return p != 0 }) {
			t.Errorf("chosen %v: no path but the first tried once probes answered", chosen)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if out := pendingPaths(c.prober); slices.Contains(out, slow) {
			t.Errorf("path %d's probe still out after 1.4 s", slow)
		}
	})
}

// pendingPaths is the paths of s whose probe is asked or under way.
func pendingPaths(s *AsyncProber) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p, on := range s.pending {
		if on {
			out = append(out, p)
		}
	}
	return out
}
