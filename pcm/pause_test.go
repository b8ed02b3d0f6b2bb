package pcm

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/pauseclock"
)

// procPause stops a client's process for a while, as a loaded host
// deschedules it: the stall detector's ticks and the sockets' reads wait
// until the pause ends, while the network and the server go on. The
// reads wait pauseReadLag longer: the detector, which compares two
// counters, can wake before the goroutine that reads and decrypts what
// queued in the sockets meanwhile, and that order is the one that tests
// it.
type procPause struct {
	mu          sync.Mutex
	from, until time.Time
	stop        chan struct{} // ends the tickers' goroutines
}

// pauseReadLag is how much later than the detector the reads resume.
const pauseReadLag = time.Millisecond

func newProcPause(t *testing.T) *procPause {
	p := &procPause{stop: make(chan struct{})}
	t.Cleanup(func() { close(p.stop) })
	return p
}

// set pauses the process for d from from.
func (p *procPause) set(from time.Time, d time.Duration) {
	p.mu.Lock()
	p.from, p.until = from, from.Add(d)
	p.mu.Unlock()
}

// wait returns at once outside the pause, and lag after its end inside.
func (p *procPause) wait(lag time.Duration) {
	p.mu.Lock()
	now := time.Now()
	in := !now.Before(p.from) && now.Before(p.until)
	until := p.until
	p.mu.Unlock()
	if in {
		time.Sleep(until.Add(lag).Sub(now))
	}
}

// pausedTicker is a time.Ticker whose ticks in a pause come at its end,
// one of them: a ticker's channel holds one tick, the rest are dropped.
type pausedTicker struct {
	*time.Ticker
	c chan time.Time
}

func (t *pausedTicker) C() <-chan time.Time { return t.c }

// ticker is Config.newTicker for a client that p pauses.
func (p *procPause) ticker(every time.Duration) pauseclock.Ticker {
	t := &pausedTicker{Ticker: time.NewTicker(every), c: make(chan time.Time, 1)}
	go func() {
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.Ticker.C:
				p.wait(0)
				select {
				case t.c <- now:
				default:
				}
			}
		}
	}()
	return t
}

// pausedConn is a socket whose reads p pauses.
type pausedConn struct {
	net.PacketConn
	p *procPause
}

func (c pausedConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(b)
	c.p.wait(pauseReadLag)
	return n, addr, err
}

// The pauses of TestNoFalseStallAfterPause: pauseFor long (the test
// process went unscheduled for up to 430 ms on a machine at load 15-19
// with -race compiles beside it; loadcut29's notes), starting at
// pauseRuns offsets pauseStep apart, which sweep a poke's cycle (a poke
// after 250 ms of silence, its ACK a round trip later) twice over.
const (
	pauseFor  = 400 * time.Millisecond
	pauseRuns = 40
	pauseStep = 17 * time.Millisecond
)

// TestNoFalseStallAfterPause: the client's process stops for pauseFor
// while a request waits for a server that thinks (thinkFor), on a healthy
// 40 ms path, at pauseRuns moments across the detector's poke cycle. The
// poke's ACK and the server's answers queue in the sockets during the
// pause; none of it is a stall. Before the detector discounted the time
// the process did not run (paused), a pause that began while a poke
// waited for its ACK ended in a stall verdict on the healthy path: 4 of
// the 40 (the others began with no poke out, and the detector's first
// tick after them pokes: the ACKs are read before its verdict could
// come).
func TestNoFalseStallAfterPause(t *testing.T) {
	stalled := 0
	for i := range pauseRuns {
		synctest.Test(t, func(t *testing.T) {
			if n := stallsAcrossPause(t, time.Duration(i)*pauseStep); n > 0 {
				stalled++
			}
		})
	}
	if stalled > 0 {
		t.Errorf("%d of %d pauses of %v ended in a stall verdict on a healthy path, want none", stalled, pauseRuns, pauseFor)
	}
}

// pausedDial dials a Client whose process p pauses, on two paths whose
// selector keeps every request on path 0 (40 ms round trip), serving
// thinkHandler, and sends one request.
func pausedDial(t *testing.T) (*memnet.Network, *Client, *procPause, *stallLog) {
	const rtt = 40 * time.Millisecond
	n := memnet.New()
	p := newProcPause(t)
	log := &stallLog{t: t}
	cfg := memConfig(t, n, 2, Config{Selector: onePath(0), Logf: log.logf, newTicker: p.ticker},
		memServe(t, n, thinkHandler(), nil))
	listen := cfg.ListenPacket
	cfg.ListenPacket = func(ip net.IP) (net.PacketConn, error) {
		pc, err := listen(ip)
		return pausedConn{pc, p}, err
	}
	c := dialConfig(t, cfg)
	n.SetDelay(memPath(0), rtt-oneWay)
	getOK(t, c, 1000)
	return n, c, p, log
}

// stallsAcrossPause runs one pause of TestNoFalseStallAfterPause, offset
// after the request's first second, and returns the stall verdicts.
func stallsAcrossPause(t *testing.T, offset time.Duration) int {
	_, c, p, log := pausedDial(t)
	p.set(time.Now().Add(time.Second+offset), pauseFor)
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	var body strings.Builder
	if _, err := c.GetOn(ctx, 0, "/think", &body); err != nil || body.String() != "thought" {
		t.Errorf("pause at %v: /think: %q, %v", offset, body.String(), err)
	}
	return len(log.stalls())
}

// TestStallFoundAfterPause: a path cut as the process pauses is still
// given up once the process runs again, within a stall timeout and two
// ticks (stallTicks) after the pause: the discount of the pause (paused)
// defers the verdict by the pause, not more. Across the same pauseRuns
// moments as TestNoFalseStallAfterPause.
func TestStallFoundAfterPause(t *testing.T) {
	bound := pauseFor + DefaultStallTimeout + 2*DefaultStallTimeout/stallTicks
	var longest time.Duration
	for i := range pauseRuns {
		synctest.Test(t, func(t *testing.T) {
			took := stallAfterPausedCut(t, time.Duration(i)*pauseStep)
			longest = max(longest, took)
			if took > bound {
				t.Errorf("cut %v into the request, as a %v pause began: the stall verdict came %v after the cut, want at most %v",
					time.Second+time.Duration(i)*pauseStep, pauseFor, took, bound)
			}
		})
	}
	t.Logf("the latest verdict came %v after its cut (bound %v)", longest, bound)
}

// stallAfterPausedCut cuts path 0 as a pause begins, offset after the
// request's first second, and returns how long after the cut the stall
// verdict came.
func stallAfterPausedCut(t *testing.T, offset time.Duration) time.Duration {
	n, c, p, log := pausedDial(t)
	cut := time.Now().Add(time.Second + offset)
	p.set(cut, pauseFor)
	time.AfterFunc(time.Until(cut), func() { n.SetDrop(memPath(0), true) })
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	if _, err := c.GetOn(ctx, 0, "/think", io.Discard); err != nil {
		t.Errorf("cut at %v: /think: %v", offset, err)
	}
	s := log.stalls()
	if len(s) == 0 {
		t.Fatalf("cut at %v: no stall verdict", offset)
	}
	return s[0].Sub(cut)
}

// jitterLate is how late every other tick of jitterTicker comes: most of
// a tick (stallTicks to the floor), as a loaded host's scheduler delays a
// goroutine's timer that the process still runs every few milliseconds.
const jitterLate = 45 * time.Millisecond

// jitterRate and jitterQueue make TestStallFoundThroughJitter's link: 1 MB/s,
// so that its 4 MB download outlasts the cut.
const jitterRate, jitterQueue = 1_000_000, 100_000

// jitterTicker is Config.newTicker for a process that runs but late: every
// other tick comes jitterLate after it was due, the next on time, so the
// ticker's grid holds and no tick is dropped.
func jitterTicker(stop <-chan struct{}) func(time.Duration) pauseclock.Ticker {
	return func(every time.Duration) pauseclock.Ticker {
		t := &pausedTicker{Ticker: time.NewTicker(every), c: make(chan time.Time, 1)}
		go func() {
			for late := false; ; late = !late {
				select {
				case <-stop:
					return
				case now := <-t.Ticker.C:
					if late {
						select {
						case <-stop:
							return
						case <-time.After(jitterLate):
						}
					}
					select {
					case t.c <- now:
					default:
					}
				}
			}
		}()
		return t
	}
}

// TestStallFoundThroughJitter: a path cut while the detector's ticks come
// late and on time by turns is given up about as soon as with ticks on
// time: the process ran, so the silence is the path's. The poke and the
// verdict may each come a late tick and a tick of the grid later, and
// the silence they wait for a tick later (250 ms here; 610-660 ms on
// time, 705-805 ms jittery in 30 runs). Before the detector counted the net lateness of its ticks
// (lagged), each late tick's lateness was left out of the silence and
// the catch-up of the next was not, and the verdict came 1.1 s after the
// cut where on-time ticks found it in 0.55 s; on a host at load 15 that
// took 862 ms out of a silence whose ticks were 400 ms late in all
// (loadcut34's notes), while the requests' deadlines ran on the wall
// clock. A detector that left out no pause at all passes this and fails
// TestNoFalseStallAfterPause.
func TestStallFoundThroughJitter(t *testing.T) {
	var onTime, jittery time.Duration
	synctest.Test(t, func(t *testing.T) { onTime = verdictAfterDownloadCut(t, nil) })
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		jittery = verdictAfterDownloadCut(t, jitterTicker(stop))
	})
	tick := DefaultStallTimeout / stallTicks
	if bound := onTime + 2*(jitterLate+tick) + tick; jittery > bound {
		t.Errorf("with every other tick %v late the stall verdict came %v after the cut, want at most %v (%v with ticks on time)",
			jitterLate, jittery, bound, onTime)
	}
}

// verdictAfterDownloadCut cuts path 0 under a download whose ACKs flow
// until the cut, so that the silence begins with it, and returns how long
// after the cut the stall verdict came; newTicker is the detector's
// ticker (nil: a time.Ticker).
func verdictAfterDownloadCut(t *testing.T, newTicker func(time.Duration) pauseclock.Ticker) time.Duration {
	const rtt = 40 * time.Millisecond
	n := memnet.New()
	log := &stallLog{t: t}
	c := dialConfig(t, memConfig(t, n, 2, Config{Selector: onePath(0), Logf: log.logf, newTicker: newTicker},
		memServe(t, n, thinkHandler(), nil)))
	n.SetDelay(memPath(0), rtt-oneWay)
	getOK(t, c, 1000)
	n.SetLink(memPath(0), jitterRate, jitterQueue)
	cut := time.Now().Add(time.Second)
	time.AfterFunc(time.Until(cut), func() { n.SetDrop(memPath(0), true) })
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	if _, err := c.GetOn(ctx, 0, fmt.Sprintf("/bytes/%d", 4*jitterRate), io.Discard); err != nil {
		t.Errorf("download: %v", err)
	}
	s := log.stalls()
	if len(s) == 0 {
		t.Fatal("no stall verdict")
	}
	return s[0].Sub(cut)
}
