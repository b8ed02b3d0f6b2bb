// Package tunnel is ct-client's side of a resumable CONNECT tunnel: the
// CONNECT (new or resume) on a stream, the copy loops both ways with the
// replay buffer of the app's bytes, and the move to another path when the
// stream's path fails, with no byte lost or duplicated (the protocol is in
// package wire's comment). It reaches the client through Host and Path
// only: the client picks paths, counts, and owns the app's connection.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/tunnelgate"
	"github.com/hetquic/hetquic/agent/wire"
)

// Host is what a tunnel needs of the client.
type Host interface {
	// Pick chooses a path for the tunnel's stream, avoiding those in avoid.
	Pick(ctx context.Context, req pathchoice.Request, avoid map[int]bool) (Path, *quic.Conn, error)
	// Context ends when the client stops.
	Context() context.Context
	StallTimeout() time.Duration // the client's stall decision
	MaxAttempts() int            // paths tried for one resume
	// OutageHold is how long a resume waits for a path when every path
	// failed; meanwhile its attempts are not counted against MaxAttempts.
	OutageHold() time.Duration
	Log() *slog.Logger
	Moved()                  // a tunnel left a failed stream
	Resumed(d time.Duration) // and went on after d
	Aborted()                // a tunnel could not resume: its app connection was reset
}

// Path is one of the client's paths as a tunnel uses it.
type Path interface {
	ID() int
	Name() string
	// Carry counts a tunnel on the path (delta +1) or off it (-1), with its
	// app's priority.
	Carry(delta, priority int)
	// Reader reads str for the path, counting what arrives as the path's.
	Reader(str *quic.Stream) io.Reader
	// Usable: the path has a connection, conn, and may take new work
	// now (it is not held after a loss: the client's failback hold).
	Usable(now time.Time) (conn *quic.Conn, ok bool)
}

// HoldPause is the pause between a request's or tunnel's attempts once
// they exceed MaxAttempts within the outage hold: a path that comes up and
// fails at once is not tried again in a busy loop.
const HoldPause = 250 * time.Millisecond

// ErrStalled marks a tunnel stream that could not be opened on its path
// in StallTimeout.
var ErrStalled = errors.New("path stalled")

// Tunnel is ct-client's side of a resumable tunnel.
type Tunnel struct {
	host    Host
	target  string
	req     pathchoice.Request
	appConn net.Conn
	slot    *tunnelgate.Ticket // its CONNECT slot; touched by traffic

	rmu wire.WaitLock // one resume at a time (it may wait out an outage)
	wmu wire.WaitLock // serialises writes up the stream (app copier, replay)
	dmu wire.WaitLock // serialises writes to the app

	mu       sync.Mutex
	cond     *sync.Cond
	id       string
	str      *quic.Stream
	br       io.Reader // the current stream's reader (after its head)
	p        Path
	home     Path          // the path it was opened on: where it moves back (failback)
	looked   time.Time     // when downLoop last looked at home (maybeFailback)
	away     chan struct{} // a move took the tunnel off home (watchHome)
	gen      int
	recvDown int64
	sentUp   int64
	upBuf    wire.ReplayBuf // the last bytes sent up; it ends at sentUp
	appEOF   bool
	ending   bool // downLoop read ct-server's FIN: no failback any more
	failed   bool
	resumes  int
}

// Open sends the CONNECT (new or resume) on a path and reads
// the answer head.
func (t *Tunnel) Open(ctx context.Context, p Path, conn *quic.Conn, resumeFrom int64) (*quic.Stream, *wire.HeadReader, *http.Response, error) {
	octx, cancel := context.WithTimeout(ctx, t.host.StallTimeout())
	str, err := conn.OpenStreamSync(octx)
	cancel()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: open stream: %v", ErrStalled, err)
	}
	head := "CONNECT " + t.target + " HTTP/1.1\r\nHost: " + t.target + "\r\n"
	if t.id == "" {
		head += wire.HdrSession + ": new\r\n"
	} else {
		head += wire.HdrSession + ": " + t.id + "\r\n" + wire.HdrResumeDown + ": " + strconv.FormatInt(resumeFrom, 10) + "\r\n"
	}
	str.SetDeadline(time.Now().Add(max(4*t.host.StallTimeout(), 5*time.Second)))
	if _, err := io.WriteString(str, head+"\r\n"); err != nil {
		str.CancelRead(wire.CodeOK)
		str.CancelWrite(wire.CodeOK)
		return nil, nil, nil, err
	}
	hr := wire.NewHeadReader(p.Reader(str))
	resp, err := hr.ReadResponse(&http.Request{Method: http.MethodConnect})
	if err != nil {
		str.CancelRead(wire.CodeOK)
		str.CancelWrite(wire.CodeOK)
		return nil, nil, nil, err
	}
	str.SetDeadline(time.Time{})
	return str, hr, resp, nil
}

// resume moves the tunnel to another path after attachment gen failed.
// It reports whether the tunnel goes on.
func (t *Tunnel) resume(gen int) bool { return t.move(gen, nil) }

// FailbackEvery is how often a tunnel that carries data and is off its
// home path looks whether home is usable again: often against a
// failback hold of seconds, rarely against the chunks a busy tunnel reads.
const FailbackEvery = 250 * time.Millisecond

// maybeFailback moves a tunnel that a path failure sent away from home
// back to it once home is usable (connected and past the client's
// failback hold), looking every FailbackEvery. downLoop calls it between
// chunks, a safe point: the move is a resume, lossless both ways (the
// replay buffers), and costs re-sending what was in flight on the other
// path. A tunnel whose app finished sending stays where it is.
func (t *Tunnel) maybeFailback(gen int, now time.Time) {
	if now.Sub(t.looked) < FailbackEvery {
		return
	}
	t.looked = now
	t.failback(gen, now)
}

// failback moves attachment gen back home if the tunnel is away from it,
// its app still sends, and home is usable at now. It reports whether the
// tunnel should keep looking: it is away, still sending and not failed.
func (t *Tunnel) failback(gen int, now time.Time) bool {
	t.mu.Lock()
	home, cur, eof, failed := t.home, t.p, t.appEOF, t.failed || t.ending
	t.mu.Unlock()
	if home == nil || cur == nil || home.ID() == cur.ID() || eof || failed {
		return false
	}
	if _, ok := home.Usable(now); ok {
		t.move(gen, home)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.failed && t.p != nil && t.p.ID() != home.ID()
}

// watchHome moves a tunnel that receives nothing (idle, or only
// uploading) back home: downLoop looks only between the chunks it reads.
// It sleeps until a move takes the tunnel away from home, then looks
// every FailbackEvery until the tunnel is home again (or its app finished
// sending, or it failed), and ends with done.
func (t *Tunnel) watchHome(done <-chan struct{}) {
	for {
		select {
		case <-t.away:
		case <-done:
			return
		}
		if !t.lookHome(done) {
			return
		}
	}
}

// lookHome looks every FailbackEvery until failback says to stop; it
// reports false when done ended it.
func (t *Tunnel) lookHome(done <-chan struct{}) bool {
	tick := time.NewTicker(FailbackEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return false
		case now := <-tick.C:
			t.mu.Lock()
			gen := t.gen
			t.mu.Unlock()
			if !t.failback(gen, now) {
				return true
			}
		}
	}
}

// attempt is the path of a move's attempt: home first for a failback,
// then the client's choice among the paths not yet tried.
func (t *Tunnel) attempt(ctx context.Context, n int, home Path, avoid map[int]bool) (Path, *quic.Conn, error) {
	if home != nil && n == 0 {
		if conn, ok := home.Usable(time.Now()); ok {
			return home, conn, nil
		}
	}
	return t.host.Pick(ctx, t.req, avoid)
}

// move moves the tunnel off attachment gen to a new stream: on another
// path after gen's failed (home nil), or back to home (failback, while
// gen's still works). It reports whether the tunnel goes on.
func (t *Tunnel) move(gen int, home Path) bool {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	t.mu.Lock()
	if t.gen != gen || t.failed || (home != nil && t.ending) {
		ok := !t.failed
		t.mu.Unlock()
		return ok
	}
	old, oldPath := t.str, t.p
	t.mu.Unlock()
	old.CancelRead(wire.CodeStalled)
	old.CancelWrite(wire.CodeStalled)
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.dmu.Lock()
	t.mu.Lock()
	if home != nil && t.ending { // ct-server finished while the failback began: nothing to move
		t.mu.Unlock()
		t.dmu.Unlock()
		return true
	}
	t.gen++ // chunks read from the old stream are dropped: the server replays them
	t.str, t.br = nil, nil
	from := t.recvDown
	t.mu.Unlock()
	t.dmu.Unlock()
	oldPath.Carry(-1, t.req.Priority)
	t.host.Moved()
	avoid := map[int]bool{oldPath.ID(): true}
	if home != nil {
		avoid = map[int]bool{} // the old path works: if home fails, it may take the tunnel back
	}
	start := time.Now()
	hold := t.host.OutageHold()
	ctx, cancel := context.WithDeadline(t.host.Context(), start.Add(hold))
	defer cancel()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt >= t.host.MaxAttempts() && !wire.SleepCtx(ctx, HoldPause) {
			break // the paths keep failing: held till the hold ends
		}
		p, conn, err := t.attempt(ctx, attempt, home, avoid)
		if err != nil {
			break
		}
		avoid[p.ID()] = true
		str, hr, resp, err := t.Open(t.host.Context(), p, conn, from)
		if err != nil {
			t.host.Log().Warn("tunnel resume failed", "target", t.target, "path", p.Name(), "err", err)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			str.CancelRead(wire.CodeOK)
			str.CancelWrite(wire.CodeOK)
			t.host.Log().Warn("tunnel resume refused", "target", t.target, "status", resp.StatusCode, "reason", resp.Header.Get(wire.HdrError))
			break
		}
		t.mu.Lock()
		low := t.sentUp - int64(len(t.upBuf.Bytes()))
		upAt, err := wire.ParseResumeUp(resp.Header.Get(wire.HdrResumeUp), low, t.sentUp)
		if err != nil {
			t.mu.Unlock()
			str.CancelRead(wire.CodeOK)
			str.CancelWrite(wire.CodeOK)
			t.host.Log().Warn("tunnel failed", "target", t.target, "err", err)
			break
		}
		data := append([]byte(nil), t.upBuf.Bytes()[upAt-low:]...)
		appEOF := t.appEOF
		t.mu.Unlock()
		if _, err := str.Write(data); err != nil {
			str.CancelRead(wire.CodeOK)
			str.CancelWrite(wire.CodeOK)
			continue
		}
		if appEOF {
			str.Close()
		}
		p.Carry(1, t.req.Priority)
		t.mu.Lock()
		t.str, t.br, t.p = str, hr.Rest(), p
		t.resumes++
		t.cond.Broadcast()
		if t.home != nil && p.ID() != t.home.ID() {
			select {
			case t.away <- struct{}{}:
			default: // watchHome has been told already
			}
		}
		t.mu.Unlock()
		t.host.Resumed(time.Since(start))
		t.host.Log().Info("tunnel moved", "target", t.target, "from", oldPath.Name(), "to", p.Name(), "failback", home != nil, "down_from_byte", from, "up_from_byte", upAt)
		return true
	}
	// The tunnel cannot go on: reset the app's connection, so a protocol
	// that ends its data with the connection sees an error, not an end.
	// Before failed is set: downLoop then closes the connection too, and
	// that close must already be a reset.
	t.host.Log().Warn("tunnel cannot resume; resetting the app connection", "target", t.target, "down_bytes", from)
	t.host.Aborted()
	ResetOnClose(t.appConn)
	t.mu.Lock()
	t.failed = true
	t.cond.Broadcast()
	t.mu.Unlock()
	t.appConn.Close()
	return false
}

// current waits for an attached stream; ok is false once the tunnel failed.
func (t *Tunnel) current() (str *quic.Stream, br io.Reader, gen int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.str == nil && !t.failed {
		t.cond.Wait()
	}
	return t.str, t.br, t.gen, !t.failed
}

// upLoop copies app → stream, keeping the replay buffer.
func (t *Tunnel) upLoop(first io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := first.Read(buf)
		if n > 0 {
			t.slot.Sent(time.Now()) // the app spoke: its server owes an answer
			for {
				_, _, _, ok := t.current()
				if !ok {
					return
				}
				t.wmu.Lock()
				t.mu.Lock()
				str, gen := t.str, t.gen
				if str == nil { // a resume is between streams
					t.mu.Unlock()
					t.wmu.Unlock()
					continue
				}
				t.upBuf.Add(buf[:n])
				t.sentUp += int64(n)
				t.mu.Unlock()
				_, werr := str.Write(buf[:n])
				t.wmu.Unlock()
				if werr != nil && !t.resume(gen) {
					return
				}
				break // the bytes are in upBuf: a resume re-sends them
			}
		}
		if rerr != nil {
			// The app finished sending (or its connection broke): FIN.
			t.wmu.Lock()
			t.mu.Lock()
			t.appEOF = true
			str := t.str
			t.mu.Unlock()
			if str != nil {
				str.Close()
			}
			t.wmu.Unlock()
			return
		}
	}
}

// downLoop copies stream → app until ct-server's FIN.
func (t *Tunnel) downLoop(delivered func(n int)) {
	buf := make([]byte, 32<<10)
	for {
		_, br, gen, ok := t.current()
		if !ok {
			return
		}
		n, rerr := br.Read(buf)
		if n > 0 {
			t.slot.Touch(time.Now())
			t.dmu.Lock()
			t.mu.Lock()
			stale := t.gen != gen
			t.mu.Unlock()
			if !stale {
				if _, err := t.appConn.Write(buf[:n]); err != nil {
					t.dmu.Unlock()
					return
				}
				t.mu.Lock()
				t.recvDown += int64(n)
				t.mu.Unlock()
				delivered(n)
			}
			t.dmu.Unlock()
			if !stale {
				t.maybeFailback(gen, time.Now())
			}
		}
		if errors.Is(rerr, io.EOF) {
			t.mu.Lock()
			stale := t.gen != gen
			t.ending = t.ending || !stale
			t.mu.Unlock()
			if !stale {
				return
			}
			continue
		}
		if rerr != nil {
			if !t.resume(gen) {
				return
			}
		}
	}
}

// New is a tunnel to target for an app whose requests are req, holding
// slot (touched by its traffic); Open then opens its stream.
func New(host Host, target string, req pathchoice.Request, slot *tunnelgate.Ticket) *Tunnel {
	return &Tunnel{host: host, target: target, req: req, slot: slot}
}

// Request is the tunnel's app request, for the choice of its path.
func (t *Tunnel) Request() pathchoice.Request { return t.req }

// Run carries the app's connection over the tunnel, whose stream str (read
// through rest after its head) ct-server answered with session id on path
// p: bytes both ways until either end finishes, moving between paths as it
// must. first is the app's side to read (its connection, after any bytes
// read ahead); delivered hears of the bytes given to the app.
func (t *Tunnel) Run(appConn net.Conn, id string, str *quic.Stream, rest io.Reader, p Path, first io.Reader, delivered func(n int)) {
	p.Carry(1, t.req.Priority)
	t.id, t.appConn, t.str, t.br, t.p, t.home = id, appConn, str, rest, p, p
	t.cond = sync.NewCond(&t.mu)
	t.away = make(chan struct{}, 1)
	done := make(chan struct{})
	var up sync.WaitGroup
	up.Go(func() { t.upLoop(first) })
	up.Go(func() { t.watchHome(done) })
	t.downLoop(delivered)
	// ct-server finished (or the tunnel failed): close the app's connection,
	// which ends the up direction too.
	t.appConn.Close()
	close(done)
	up.Wait()
	t.mu.Lock()
	str, p, failed := t.str, t.p, t.failed
	t.failed = true
	t.cond.Broadcast()
	t.mu.Unlock()
	if !failed && str != nil {
		str.CancelRead(wire.CodeOK) // the FIN went up in upLoop
		p.Carry(-1, t.req.Priority)
	}
}

// ResetOnClose makes closing conn a reset (RST), not an end (FIN), so that
// an app whose protocol ends its data with the connection sees an error.
func ResetOnClose(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}
