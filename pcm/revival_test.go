package pcm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// TestRevivalAcrossServerPause: a path rests (its side probe lost while
// the others' were answered), and the server stops for serverPauseProbed
// on every path as that path's revival probe goes out, so the probe is
// lost too. With the probes off the path rests on a failed switch into
// it, its revival check is a side handshake (checkPath), and the pause
// (revivalPauseOff) outlasts that handshake's timeout. The pause says nothing of the path (the evidence rule:
// silenceTellsLocked).
//
//   - "healed": the path is healthy again before its revival probe; it
//     must be back within revivalBound of the pause's end. On main the
//     lost revival probe doubled its rest (2 -> 4 s) and it came back a
//     DownBackoff later than that.
//   - "dead": the path stays cut; it is still resting at that bound, and
//     its next revival probe, lost while the server runs, doubles its
//     rest. A rule that never rests again on a lost revival probe fails
//     this row; the rule before (always doubles) fails "healed".
//
// The selector plays no part (the rest and the probes' schedule are the
// client's); fake time.
func TestRevivalAcrossServerPause(t *testing.T) {
	for _, tc := range []struct {
		name   string
		healed bool
		off    bool // probes off: the revival check is a side handshake (checkPath)
	}{{"healed", true, false}, {"dead", false, false}, {"probes off/healed", true, true}, {"probes off/dead", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { revivalAcrossPause(t, tc.healed, tc.off) })
		})
	}
}

// revivalBound is how soon after the pause a healed path must be back: its
// rest again, not doubled (DownBackoff), and its next probe turn (two
// idle paths at the default rate: one second). The lost revival probe's
// verdict comes within the pause (a probe's timeout, 1 s, is shorter).
const revivalBound = 2*time.Second + 2*time.Second/pathsel.DefaultProbesPerSecond

// revivalPauseOff is the pause with the probes off: longer than a revival
// handshake's timeout (revivalHandshakes probe timeouts, 2 s).
const revivalPauseOff = 2500 * time.Millisecond

func revivalAcrossPause(t *testing.T, healed, off bool) {
	pastRealClock()
	n := memnet.New()
	p := &serverPause{}
	var logs logCount
	cfg := Config{Logf: logs.logf, Probes: Probes{Off: off}}
	c := dialConfig(t, memConfig(t, n, 3, cfg, memServe(t, n, origin.Handler(nil), p.wrap)))
	getOK(t, c, 1000)
	n.SetDrop(memPath(2), true)
	if off {
		if _, err := c.GetOn(context.Background(), 2, "/bytes/10", nil); err != nil {
			t.Fatal(err) // it goes where the connection is
		}
	}
	waitFor(t, 10*time.Second, "path 2 rests", func() bool { return c.Resting()[2] })
	if healed {
		n.SetDrop(memPath(2), false)
	}
	waitFor(t, 10*time.Second, "path 2's revival check begins", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		ps := c.paths[2]
		return ps.down && (!ps.probe.out.IsZero() || ps.checking)
	})
	pause := serverPauseProbed
	if off {
		pause = revivalPauseOff
	}
	p.set(time.Now(), pause)
	end := time.Now().Add(pause)
	if healed {
		waitFor(t, pause+revivalBound, "path 2 back after the pause", func() bool { return !c.Resting()[2] })
		t.Logf("back %v after the pause", time.Since(end))
		return
	}
	time.Sleep(time.Until(end.Add(revivalBound)))
	if !c.Resting()[2] {
		t.Fatalf("a cut path is back %v after a pause of the server; log:\n%s", revivalBound, logs.String())
	}
	waitFor(t, 2*time.Second/pathsel.DefaultProbesPerSecond+2*time.Second, "a cut path's rest doubled", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.paths[2].down && c.paths[2].backoff == 2*c.cfg.DownBackoff
	})
}

// waitFor polls cond every millisecond, in fake time, and fails the test
// when it has not held within d. Finer than memnet's one-way delay
// (oneWay): the pause begins before what the revival check sent reaches
// the server (at 10 ms the side handshake's poke was answered before it
// in 6 of 40 runs, and that answer is the server running).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}
