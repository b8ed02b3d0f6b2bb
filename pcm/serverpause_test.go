package pcm

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// serverPause stops a server's process for a while, as a loaded host
// deschedules it: it reads and sends nothing, on every path at once, and
// what the clients sent meanwhile waits in its socket until the pause ends.
// No client can tell that silence from a dead path by its active path
// alone (loadcut29's notes: aioquic's event loop went 0.6-0.8 s without
// running at load 15-20).
type serverPause struct {
	mu          sync.Mutex
	from, until time.Time
}

// set pauses the server for d from from.
func (p *serverPause) set(from time.Time, d time.Duration) {
	p.mu.Lock()
	p.from, p.until = from, from.Add(d)
	p.mu.Unlock()
}

// wait returns at once outside the pause, and at its end inside.
func (p *serverPause) wait() {
	p.mu.Lock()
	now := time.Now()
	in := !now.Before(p.from) && now.Before(p.until)
	until := p.until
	p.mu.Unlock()
	if in {
		time.Sleep(until.Sub(now))
	}
}

// wrap is memServe's wrap for a server that p pauses.
func (p *serverPause) wrap(pc net.PacketConn) net.PacketConn { return pausedServerConn{pc, p} }

// pausedServerConn is a server socket whose reads and sends p pauses.
type pausedServerConn struct {
	net.PacketConn
	p *serverPause
}

func (c pausedServerConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(b)
	c.p.wait()
	return n, addr, err
}

func (c pausedServerConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.p.wait()
	return c.PacketConn.WriteTo(b, addr)
}

// The pauses of TestServerPauseIsNoStall: serverPauseFor long (aioquic's
// event loop at load 15-20, loadcut29's notes), starting at
// serverPauseRuns offsets serverPauseStep apart across a poke's cycle.
const (
	serverPauseFor   = 800 * time.Millisecond
	serverPauseRuns  = 10
	serverPauseStep  = 23 * time.Millisecond
	serverPauseWidth = 8       // concurrent GETs
	serverPauseBody  = 100_000 // bytes of each
)

// TestServerPauseIsNoStall: the server stops for serverPauseFor on every
// path at once while a Client's requests download bodies on a healthy
// path, at serverPauseRuns moments; no path may be given up (resting
// after the pause) and no request may fail. The detector's verdict may
// come (the silence is as long as a cut's), but the failover must hear
// the path answer and keep it.
func TestServerPauseIsNoStall(t *testing.T) {
	serverPauses(t, serverPauseFor, serverPauseWidth, Config{Selector: onePath(0)})
}

// TestServerPauseRestsNoProbedPath: the same with the side probes on (the
// default selector), a pause longer than a probe's timeout, and the
// client idle but for the probes, which go unanswered as everything else
// does: the idle paths must not rest.
const serverPauseProbed = 1500 * time.Millisecond

func TestServerPauseRestsNoProbedPath(t *testing.T) {
	serverPauses(t, serverPauseProbed, 0, Config{})
}

// serverPauses runs serverPauseRuns pauses of the server of d, each with
// a Client of cfg and width requests at a time, and fails when one
// leaves a path resting or a request failed.
func serverPauses(t *testing.T, d time.Duration, width int, cfg Config) {
	verdicts, rested, failed := 0, 0, 0
	for i := range serverPauseRuns {
		synctest.Test(t, func(t *testing.T) {
			v, r, f := acrossServerPause(t, time.Duration(i)*serverPauseStep, d, width, cfg)
			t.Logf("pause at +%v: %d stall verdicts, %d paths resting after it, %d requests failed",
				time.Duration(i)*serverPauseStep, v, r, f)
			verdicts += v
			rested += r
			failed += f
		})
	}
	t.Logf("%d pauses of %v: %d stall verdicts, %d paths resting after them, %d requests failed",
		serverPauseRuns, d, verdicts, rested, failed)
	if rested > 0 || failed > 0 {
		t.Errorf("%d pauses of the server of %v: %d paths given up, %d requests failed; want none",
			serverPauseRuns, d, rested, failed)
	}
}

// acrossServerPause runs one pause of the server of d, offset after the
// load's first second, with a Client of cfg on three paths and width
// requests at a time, and returns the stall verdicts, the paths resting
// a second after the pause, and the failed requests.
func acrossServerPause(t *testing.T, offset, d time.Duration, width int, cfg Config) (verdicts, rested, failed int) {
	n := memnet.New()
	p := &serverPause{}
	var mu sync.Mutex
	cfg.Logf = func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		if strings.HasSuffix(line, "; failing over") {
			mu.Lock()
			verdicts++
			mu.Unlock()
		}
	}
	c := dialConfig(t, memConfig(t, n, 3, cfg, memServe(t, n, origin.Handler(nil), p.wrap)))
	getOK(t, c, 1000)
	start := time.Now()
	p.set(start.Add(time.Second+offset), d)
	end := start.Add(time.Second + offset + d + time.Second)
	var wg sync.WaitGroup
	for w := range width {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				if err := pauseGet(c, serverPauseBody+w*100+i); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					t.Logf("request of worker %d: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Until(end))
	for _, r := range c.Resting() {
		if r {
			rested++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return verdicts, rested, failed
}

// pauseGet is one GET of an n-byte body through c's RoundTrip, read whole.
func pauseGet(c *Client, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/bytes/%d", memServer, n), nil)
	if err != nil {
		return err
	}
	resp, err := c.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil && got != int64(n) {
		err = fmt.Errorf("%d of %d bytes", got, n)
	}
	return err
}

// TestServerPauseRestsNoSwitchedPath: the server stops on every path
// while an idle Client's selector-driven switch validates its path on the
// connection, at serverPauseRuns moments serverPauseStep apart. The
// validation fails as on a dead path, but nothing answered anywhere
// meanwhile, so no path may rest a second after the pause, and the
// request that asked for the switch must not fail (it goes where the
// connection is). TestProbeDeadlineAndRest is the other half: a dead
// path whose switch fails while the server runs still rests, so "never
// rest on a failed switch" fails that test and "always rest" (the rule
// before) fails this one.
func TestServerPauseRestsNoSwitchedPath(t *testing.T) {
	rested, failed := 0, 0
	for i := range serverPauseRuns {
		synctest.Test(t, func(t *testing.T) {
			offset := time.Duration(i) * serverPauseStep
			r, f := switchAcrossServerPause(t, offset)
			t.Logf("switch at +%v into the pause: %d paths resting after it, %d requests failed", offset, r, f)
			rested += r
			failed += f
		})
	}
	if rested > 0 || failed > 0 {
		t.Errorf("%d pauses of the server of %v during a switch: %d paths given up, %d requests failed; want none",
			serverPauseRuns, serverPauseProbed, rested, failed)
	}
}

// switchAcrossServerPause pauses the server of an idle Client on three
// paths for serverPauseProbed and, offset into the pause, asks for a
// switch from path 0 to path 1 with one request. The validation waits
// ProbeTimeout (the path was never side-probed: validateWait), so with
// offset under serverPauseProbed − ProbeTimeout it fails within the
// pause. It returns the paths resting a second after the pause and the
// failed requests.
func switchAcrossServerPause(t *testing.T, offset time.Duration) (rested, failed int) {
	const lead = 100 * time.Millisecond // idle time before the pause
	n := memnet.New()
	p := &serverPause{}
	var want atomic.Int32
	c := dialConfig(t, memConfig(t, n, 3, Config{Selector: wishSelector{&want}, Logf: t.Logf},
		memServe(t, n, origin.Handler(nil), p.wrap)))
	getOK(t, c, 1000)
	start := time.Now()
	p.set(start.Add(lead), serverPauseProbed)
	time.Sleep(lead + offset)
	want.Store(1)
	if err := pauseGet(c, 1000); err != nil {
		failed++
		t.Logf("the request that asked for the switch: %v", err)
	}
	time.Sleep(time.Until(start.Add(lead + serverPauseProbed + time.Second)))
	for _, r := range c.Resting() {
		if r {
			rested++
		}
	}
	return rested, failed
}

// TestSwitchIntoDeadPathRests is TestServerPauseRestsNoSwitchedPath's
// control: the same idle Client's switch, into a path that is cut while
// the server runs, rests that path (the validation's poke draws the
// server's answer on the path the connection is on:
// startValidationLocked), and the request goes where the connection is.
// "Never rest on a failed switch" fails it, and so did the rule without
// the poke: nothing else is acknowledged on an idle connection.
func TestSwitchIntoDeadPathRests(t *testing.T) {
	wrong, failed := 0, 0
	for i := range serverPauseRuns {
		synctest.Test(t, func(t *testing.T) {
			after := time.Duration(i) * serverPauseStep
			n := memnet.New()
			var want atomic.Int32
			c := memDial(t, n, 3, Config{Selector: wishSelector{&want}, Logf: t.Logf})
			getOK(t, c, 1000)
			time.Sleep(after)
			n.SetDrop(memPath(1), true)
			want.Store(1)
			if err := pauseGet(c, 1000); err != nil {
				failed++
				t.Logf("the request that asked for the switch: %v", err)
			}
			r := c.Resting()
			t.Logf("switch %v after the last response: resting %v", after, r)
			if !r[1] || r[0] || r[2] {
				wrong++
			}
		})
	}
	if wrong > 0 || failed > 0 {
		t.Errorf("%d switches into a cut path: %d left another set resting than path 1 alone, %d requests failed; want none",
			serverPauseRuns, wrong, failed)
	}
}
