package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/quic-go/quic-go"
)

// SessionGrace is how long ct-server keeps a finished tunnel session's
// replay buffer for a resume of its last bytes.
const SessionGrace = 10 * time.Second

// DetachGrace is how long ct-server keeps a detached tunnel session: as
// long as ct-client holds a tunnel whose paths all failed.
const DetachGrace = wire.DefaultOutageHold

// growReplay reserves what the replay buffer needs to take n more bytes
// (se.mu held); false when the client's budget (or the server's) refuses
// them. Then the buffer keeps its size and drops its oldest bytes: the
// tunnel goes on, and only a resume from before its kept bytes is refused
// (the app's connection is reset, never served wrong bytes). Waiting for
// the budget instead stalled a tunnel for as long as other tunnels, idle
// with full buffers, held it: a 200 and then nothing.
func (se *session) growReplay(n int) bool {
	g := int64(se.replay.Growth(n))
	if g == 0 {
		return true
	}
	if se.closed || se.released || !se.srv.reserveBytes(se.owner, g) {
		return false
	}
	se.grown += g
	return true
}

// session is ct-server's side of a resumable tunnel.
type session struct {
	id    string
	owner *clientState
	up    net.Conn
	srv   *Server

	wmu wire.WaitLock // serialises writes down the attached stream (pump, replay)
	umu wire.WaitLock // serialises writes upstream (the attachments' copiers)

	mu       sync.Mutex
	cond     *sync.Cond
	str      *quic.Stream // nil while detached
	gen      int
	replay   wire.ReplayBuf // the last bytes sent down; it ends at sentDown
	sentDown int64
	recvUp   int64
	upDone   bool  // the upstream finished sending
	appDone  bool  // the client finished sending
	finished bool  // both directions done; kept SessionGrace for a late resume
	released bool  // the client's tunnel slot is given back
	held     int64 // bytes still reserved after the slot went back: the replay buffer's
	grown    int64 // the replay buffer's bytes reserved beyond TunnelIdleCost
	closed   bool
	timer    *time.Timer
}

func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// openSession dials upstream and runs a new session on str.
func (s *Server) openSession(str *quic.Stream, hr *wire.HeadReader, cs *clientState, upstream string) {
	up, err := s.dialUpstream(s.ctx, "tcp", upstream)
	if err != nil {
		str.CancelRead(wire.CodeOK)
		s.upstreamFailed(str, upstream, err)
		str.Close()
		s.done(cs, workTunnel, TunnelIdleCost)
		return
	}
	se := &session{id: newSessionID(), owner: cs, up: up, srv: s, replay: wire.ReplayBuf{Max: wire.ReplayDownBytes}}
	se.cond = sync.NewCond(&se.mu)
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		up.Close()
		s.done(cs, workTunnel, TunnelIdleCost)
		str.CancelRead(wire.CodeShutdown)
		str.CancelWrite(wire.CodeShutdown)
		return
	}
	s.sessions[se.id] = se
	s.wg.Add(1)
	s.mu.Unlock()
	go se.pumpDown()
	se.attach(str, hr, 0)
}

// resumeSession attaches str to the session the request names.
func (s *Server) resumeSession(str *quic.Stream, hr *wire.HeadReader, cs *clientState, req *http.Request) {
	id, from, err := wire.ParseResume(req.Header)
	s.mu.Lock()
	se := s.sessions[id]
	s.mu.Unlock()
	if se == nil || se.owner != cs || err != nil {
		str.CancelRead(wire.CodeOK)
		wire.ErrorResponse(str, http.StatusNotFound, "no such tunnel session")
		str.Close()
		return
	}
	se.attach(str, hr, from)
}

// close ends the session: the upstream connection, the stream, the slot.
func (se *session) close() {
	se.mu.Lock()
	if se.closed {
		se.mu.Unlock()
		return
	}
	se.closed = true
	str, finished := se.str, se.finished
	se.str = nil
	if se.timer != nil {
		se.timer.Stop()
	}
	se.cond.Broadcast()
	se.mu.Unlock()
	se.up.Close()
	if str != nil {
		str.CancelRead(wire.CodeShutdown)
		if !finished {
			str.CancelWrite(wire.CodeAborted) // never a clean FIN for a broken tunnel
		}
	}
	se.srv.mu.Lock()
	delete(se.srv.sessions, se.id)
	se.srv.mu.Unlock()
	se.release()
}

// release gives back what the session still holds (the session ended):
// its slot and reservation, or what finish kept of it; the replay buffer
// goes with it.
func (se *session) release() {
	se.mu.Lock()
	done, held := se.released, se.held
	if !done {
		held = se.grown
	}
	se.released, se.held, se.grown = true, 0, 0
	se.replay.Free()
	se.mu.Unlock()
	if !done {
		se.srv.done(se.owner, workTunnel, TunnelIdleCost)
	}
	if held > 0 {
		se.srv.unreserve(se.owner, held)
	}
}

// finish is the end of both directions: the upstream connection closes and
// the slot is given back, but the replay buffer stays SessionGrace, for the
// stream carrying the last bytes and the FIN may still fail before they
// arrive, and the client then resumes. Its bytes stay reserved (the
// client's buffer limit and the server's memory budget) until it is freed:
// a client cycling short tunnels held up to wire.ReplayDownBytes each outside the
// budget for SessionGrace.
func (se *session) finish() {
	se.up.Close()
	se.mu.Lock()
	if se.finished || se.closed {
		se.mu.Unlock()
		return
	}
	se.finished = true
	if se.timer != nil {
		se.timer.Stop()
	}
	se.timer = time.AfterFunc(SessionGrace, se.close)
	slot := !se.released
	if slot {
		se.released, se.held, se.grown = true, se.grown, 0
	}
	se.mu.Unlock()
	if slot {
		se.srv.done(se.owner, workTunnel, TunnelIdleCost)
	}
}

// unreserve gives back n reserved bytes of cs, without a slot.
func (s *Server) unreserve(cs *clientState, n int64) {
	cs.mu.Lock()
	cs.buffered -= n
	cs.mu.Unlock()
	s.reserved.Add(-n)
}

// detach marks the attachment gen gone; the session waits DetachGrace
// for a resume.
func (se *session) detach(gen int) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.gen != gen || se.closed {
		return
	}
	se.str = nil
	if se.finished {
		return // its timer runs already
	}
	if se.timer != nil {
		se.timer.Stop()
	}
	se.timer = time.AfterFunc(DetachGrace, se.close)
}

// attach makes str the session's stream, replaying from byte from, and
// copies what the client sends upstream until the stream ends.
func (se *session) attach(str *quic.Stream, hr *wire.HeadReader, from int64) {
	se.mu.Lock()
	old := se.str
	se.mu.Unlock()
	if old != nil && old != str {
		old.CancelRead(wire.CodeStalled)
		old.CancelWrite(wire.CodeStalled)
	}
	se.wmu.Lock()
	a, closed, ok := se.adopt(str, from)
	if !ok {
		se.wmu.Unlock()
		str.CancelRead(wire.CodeOK)
		if closed {
			wire.ErrorResponse(str, http.StatusNotFound, "tunnel session ended")
		} else {
			wire.ErrorResponse(str, http.StatusConflict, "resume offset outside the replay buffer")
		}
		str.Close()
		return
	}
	head := "HTTP/1.1 200 Connection established\r\n" + wire.HdrSession + ": " + se.id + "\r\n" +
		wire.HdrResumeUp + ": " + strconv.FormatInt(a.recvUp, 10) + "\r\n\r\n"
	_, err := io.WriteString(str, head)
	if err == nil && len(a.replay) > 0 {
		_, err = str.Write(a.replay)
	}
	if err == nil && a.upDone {
		str.Close()
	}
	se.wmu.Unlock()
	if err != nil {
		se.detach(a.gen)
		return
	}
	se.pumpUp(hr.Rest(), a.gen)
}

// attachment is what a new attachment starts from: its generation, the
// bytes to replay down, the app bytes received so far (the client resends
// from there), and whether upstream has finished already.
type attachment struct {
	gen    int
	replay []byte
	recvUp int64
	upDone bool
}

// adopt makes str the session's stream (se.wmu held) when from lies in the
// replay buffer and the session is open; closed says why not otherwise.
func (se *session) adopt(str *quic.Stream, from int64) (a attachment, closed, ok bool) {
	se.umu.Lock()
	defer se.umu.Unlock()
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.closed || from > se.sentDown || from < se.sentDown-int64(len(se.replay.Bytes())) {
		return a, se.closed, false
	}
	se.gen++
	se.str = str
	if se.timer != nil && !se.finished {
		se.timer.Stop()
		se.timer = nil
	}
	a = attachment{gen: se.gen, recvUp: se.recvUp, upDone: se.upDone,
		replay: append([]byte(nil), se.replay.Bytes()[int64(len(se.replay.Bytes()))-(se.sentDown-from):]...)}
	se.cond.Broadcast()
	return a, false, true
}

// pumpUp copies client → upstream for attachment gen until the stream
// ends, a newer attachment takes over, or upstream fails.
func (se *session) pumpUp(r io.Reader, gen int) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 && !se.sendUp(buf[:n], gen) {
			return
		}
		if errors.Is(rerr, io.EOF) {
			se.upEOF()
			return
		}
		if rerr != nil {
			se.detach(gen)
			return
		}
	}
}

// sendUp writes b upstream if gen is still the attachment; it reports
// whether the pump goes on.
func (se *session) sendUp(b []byte, gen int) bool {
	se.umu.Lock()
	se.mu.Lock()
	current := se.gen == gen && !se.closed
	se.mu.Unlock()
	if !current {
		se.umu.Unlock()
		return false // a newer attachment took over; it re-receives these bytes
	}
	_, werr := se.up.Write(b)
	se.mu.Lock()
	se.recvUp += int64(len(b))
	se.mu.Unlock()
	se.umu.Unlock()
	if werr != nil {
		se.close()
		return false
	}
	return true
}

// upEOF passes the client's end of data upstream; the session finishes if
// upstream has ended too.
func (se *session) upEOF() {
	if tc, ok := se.up.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	se.mu.Lock()
	se.appDone = true
	done := se.upDone
	se.mu.Unlock()
	if done {
		se.finish()
	}
}

// pumpDown copies upstream → the attached stream, keeping the replay
// buffer, and waits while detached (which holds the upstream back).
func (se *session) pumpDown() {
	defer se.srv.wg.Done()
	stop := context.AfterFunc(se.srv.ctx, se.close)
	defer stop()
	buf := make([]byte, 32<<10)
	for {
		n, rerr := se.up.Read(buf)
		if n > 0 {
			if wait, err := se.owner.take(n, time.Now()); err != nil {
				se.close()
				return
			} else if wait > 0 && !wire.SleepCtx(se.srv.ctx, wait) {
				return
			}
			se.wmu.Lock()
			se.mu.Lock()
			if se.growReplay(n) {
				se.replay.Add(buf[:n])
			} else {
				se.replay.AddKeep(buf[:n])
			}
			se.sentDown += int64(n)
			str, gen := se.str, se.gen
			se.mu.Unlock()
			var werr error
			if str != nil {
				_, werr = str.Write(buf[:n])
			}
			se.wmu.Unlock()
			if werr != nil {
				se.detach(gen)
			}
			// Detached: wait for a resume (it replays these bytes) or the end.
			se.mu.Lock()
			for se.str == nil && !se.closed {
				se.cond.Wait()
			}
			closed := se.closed
			se.mu.Unlock()
			if closed {
				return
			}
		}
		if rerr != nil {
			se.wmu.Lock()
			se.mu.Lock()
			se.upDone = true
			str, done := se.str, se.appDone
			se.mu.Unlock()
			if str != nil {
				str.Close()
			}
			se.wmu.Unlock()
			if !errors.Is(rerr, io.EOF) && !done {
				se.close() // the upstream broke: nothing more will come
			} else if done {
				se.finish()
			}
			return
		}
	}
}
