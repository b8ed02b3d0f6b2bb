package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/idlebody"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/tunnel"
	"github.com/hetquic/hetquic/agent/uploadreplay"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/resume"
)

// Timeouts of the request path. None bounds a whole request: a body or a
// response may take as long as it keeps moving.
const (
	// ResponseHeadTimeout bounds ct-client's wait for a response head
	// after the whole request went out: ct-server's own wait for the
	// app-server (wire.DefaultUpstreamTimeout, after which it answers 504) plus
	// 5 s, so the app gets ct-server's answer rather than this cut. A head
	// that is late while pings answer means a slow app-server, not a dead
	// path (stall detection keeps waiting), so without this bound a
	// request to an app-server that never answers was held for ever.
	ResponseHeadTimeout = wire.DefaultUpstreamTimeout + 5*time.Second
)

var (
	// errHeadTimeout: no response head within ResponseHeadTimeout.
	errHeadTimeout = errors.New("no response head")
	// errGivenUp: the request's context ended before its answer: the
	// app's connection ended (net/http cancels the request then, with no
	// cause of its own) or a stripe no longer needs the piece. The path
	// is not to blame, whatever error that left.
	errGivenUp = errors.New("request cancelled: the app's connection ended, or its stripe no longer needs it")
)

// forward sends r through ct-server and writes the response to w. When
// the path stalls or its connection dies mid-response, a GET or HEAD carries
// on over another path from the byte where it stopped (Cybertwin §IV-B:
// re-request (localSize, fileSize]), so the app sees one intact response.
// It returns the body bytes written to w.
//
// Stall detection: a read waits StallTimeout/2; if nothing arrived on any
// stream of the path meanwhile, ct-client pings ct-server over the path with
// another StallTimeout/2. No pong: the path is dead, the stream moves (about
// StallTimeout after the last byte). A pong: the app-server is slow, not the
// path, and the stream keeps waiting (up to ResponseHeadTimeout for a head).
func (c *Client) forward(w http.ResponseWriter, r *http.Request, sr pathchoice.Request) (int64, error) {
	return c.newFetch(w, r, sr, 0, false).run()
}

// forwardFrom is forward for a response of which delivered body bytes
// (and the head, if headersSent) went to the app already.
func (c *Client) forwardFrom(w http.ResponseWriter, r *http.Request, sr pathchoice.Request, delivered int64, headersSent bool) (int64, error) {
	return c.newFetch(w, r, sr, delivered, headersSent).run()
}

// fetch is one app request (not CONNECT) on its way through ct-server,
// over the attempts it may take: what went to the app already (the head,
// body bytes), the paths tried, and when the last attempt stalled. run
// plans each attempt (request), runs it on one stream (a leg), and decides
// what its failure means (again, fail).
type fetch struct {
	c   *Client
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context
	sr  pathchoice.Request
	hdr http.Header // the app's header, hop-by-hop fields removed

	resumable bool // GET/HEAD, no body, at most one range: may go on elsewhere
	orig      resume.Range
	hasRange  bool
	body      *idlebody.Body     // the app's request body (nil: none); read once
	replay    *uploadreplay.Body // the body as attempts send it: again from its start, within a budget

	delivered   int64 // body bytes written to w
	headersSent bool
	stalledAt   time.Time // last byte of a stalled attempt (zero: none pending)
	lost        time.Time // when the attempts began failing for the path (zero: none failed)
	avoid       map[int]bool
	refusals    int // ct-server's limit refusals waited out
	free        int // retries after our own closing of a connection that do not count
	// claim, if set, opens each attempt's stream with open: a stripe's
	// piece, whose range (orig) is known only once its first stream is
	// open (stripe.Request.Open).
	claim func(open func() error) error
	next  bool // with claim: the app waits on the piece now (stripe.Request.Next)
}

func (c *Client) newFetch(w http.ResponseWriter, r *http.Request, sr pathchoice.Request, delivered int64, headersSent bool) *fetch {
	f := &fetch{c: c, w: w, r: r, ctx: r.Context(), sr: sr, delivered: delivered, headersSent: headersSent, avoid: map[int]bool{}}
	hasBody := r.Body != nil && r.Body != http.NoBody
	f.resumable = (r.Method == http.MethodGet || r.Method == http.MethodHead) && (!hasBody || r.ContentLength == 0)
	if v := r.Header.Get("Range"); v != "" {
		if f.orig, f.hasRange = resume.ParseRange(v); !f.hasRange {
			f.resumable = false
		}
	}
	if !f.resumable && hasBody {
		rc := http.NewResponseController(w)
		// The response is read while the body is still going out (an
		// echo's response fills the window before the body ends); net/http
		// would otherwise stop the body at the response's first flush.
		rc.EnableFullDuplex()
		f.body = idlebody.New(r.Body, rc.SetReadDeadline)
		f.replay = uploadreplay.New(f.body, &c.replayPool)
	}
	f.hdr = r.Header.Clone()
	wire.RemoveHopHeaders(f.hdr)
	if _, ok := f.hdr["User-Agent"]; !ok {
		f.hdr["User-Agent"] = []string{""} // pass the app's absence on: no Go default
	}
	return f
}

func (f *fetch) run() (int64, error) {
	if f.body != nil {
		defer f.body.Clear()
	}
	if f.replay != nil {
		defer f.replay.Drop()
	}
	attempts := 1
	if f.resumable || f.replay != nil {
		attempts = f.c.cfg.MaxAttempts
	}
	f.free = 2 * attempts
	var lastErr error
	for attempt := 0; attempt < attempts || f.holding(); attempt++ {
		if attempt >= attempts && !wire.SleepCtx(f.ctx, tunnel.HoldPause) {
			break
		}
		p, conn, err := f.c.pickBy(f.ctx, f.sr, f.avoid, f.pathBy())
		if err != nil {
			lastErr = err
			break
		}
		f.avoid[p.id] = true
		l := &leg{f: f, p: p, conn: conn, plan: f.stripePlan(attempt)}
		l.out, l.start = f.request()
		n, err := l.run()
		f.delivered += n
		if errors.Is(err, errStriped) {
			return l.plan.run.finish(f.w, f.delivered)
		}
		if l.plan != nil && l.plan.run != nil {
			if f.pathTrouble(err) && l.plan.run.TakeOver(f.delivered) {
				// The original's path failed before its cut: the stripe
				// fetches the rest of the original's part too. Nothing
				// gets a new head, so no resume gap is measured.
				f.c.migrations.Add(1)
				f.c.takeOvers.Add(1)
				return l.plan.run.finish(f.w, f.delivered)
			}
			l.plan.run.abandon() // the original failed before the striped part
		}
		if err == nil {
			return f.delivered, nil
		}
		lastErr = err
		again, uncounted := f.again(err, p)
		if !again || !f.resumable && !f.replayable(l) {
			break
		}
		f.noteLoss(err, n)
		if uncounted {
			attempt--
		}
	}
	return f.delivered, f.fail(lastErr)
}

// stripePlan is the plan of attempt: the first attempt of a plain GET may
// go on striped.
func (f *fetch) stripePlan(attempt int) *stripePlan {
	if attempt == 0 && !f.headersSent && f.r.Method == http.MethodGet && f.resumable && !f.hasRange && f.claim == nil && f.c.cfg.StripeMin > 0 {
		return &stripePlan{}
	}
	return nil
}

// pathBy is how long the next attempt may wait for a path: the outage
// hold from the loss, or from now when nothing was lost.
func (f *fetch) pathBy() time.Time {
	if f.lost.IsZero() {
		return time.Now().Add(f.c.cfg.OutageHold)
	}
	return f.lost.Add(f.c.cfg.OutageHold)
}

// noteLoss records what a failed attempt that delivered n bytes says of an
// outage: a path lost starts one (or starts it again after progress);
// ct-server answering ends it.
func (f *fetch) noteLoss(err error, n int64) {
	switch {
	case !pathLost(err):
		f.lost = time.Time{} // ct-server answered: no outage to hold
	case f.lost.IsZero() || n > 0:
		f.lost = time.Now() // the outage, if it is one, starts here
	}
}

// holding: the fetch lost its path within the outage hold and may go on
// trying (waiting for a path) however many attempts that takes, as long
// as it can go on where it stopped.
func (f *fetch) holding() bool {
	return (f.resumable || f.replay != nil) && !f.lost.IsZero() && time.Since(f.lost) < f.c.cfg.OutageHold
}

// pathLost: an attempt's failure was its path's (a stall, the connection
// lost), not ct-server resetting the stream (its upstream failed): only
// the former may be an outage to hold.
func pathLost(err error) bool {
	var se *quic.StreamError
	return !errors.As(err, &se) || !se.Remote
}

// replayable: a request that cannot go on from where it stopped may be
// sent again from its first byte after leg l failed, as no head went to
// the app, its body had not all gone out (so the app-server never got it
// whole) and every byte read of it is kept (uploadreplay.Body).
func (f *fetch) replayable(l *leg) bool {
	cut := l.sent == nil || l.sendErr != nil // never sent, or not all of it
	if f.replay == nil || f.headersSent || !cut || !f.replay.Rewind() {
		return false
	}
	f.c.uploadReplays.Add(1)
	f.c.cfg.Log.Info("sending the request again from its first byte", "method", f.r.Method, "url", f.r.URL.String())
	return true
}

// request is the next attempt's request to ct-server, asking for the
// bytes from start on (Range) when part of the body went to the app.
func (f *fetch) request() (out *http.Request, start int64) {
	r := f.r
	out = &http.Request{Method: r.Method, URL: r.URL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: f.hdr.Clone(), Host: r.Host}
	if f.replay != nil {
		out.Body, out.ContentLength, out.TransferEncoding = f.replay, r.ContentLength, r.TransferEncoding
	} else if f.body != nil {
		out.Body, out.ContentLength, out.TransferEncoding = f.body, r.ContentLength, r.TransferEncoding
	}
	start = f.delivered
	if f.hasRange {
		start += f.orig.First
		out.Header.Set("Range", resume.Range{First: start, Last: f.orig.Last}.String())
	} else if f.delivered > 0 {
		out.Header.Set("Range", resume.Range{First: f.delivered, Last: -1}.String())
	}
	if f.headersSent && out.Header.Get("If-Range") == "" {
		// Resume only the same version of the resource (RFC 9110 §13.1.5).
		if v := resume.Validator(f.w.Header()); v != "" {
			out.Header.Set("If-Range", v)
		}
	}
	return out, start
}

// again says whether a failed attempt is worth another, and whether that
// one does not count against MaxAttempts (a refusal waited out, or our own
// closing of a connection under a sibling's stall).
func (f *fetch) again(err error, p *path) (again, uncounted bool) {
	c := f.c
	if errors.Is(err, errRefused) && f.ctx.Err() == nil && f.refusals < limitRetries {
		// Refused by ct-server's limits: wait for a slot.
		f.refusals++
		c.limitRetries.Add(1)
		delete(f.avoid, p.id)
		return wire.SleepCtx(f.ctx, min(limitRetryFirst<<f.refusals, limitRetryMax)), true
	}
	// A stream deadline that fired (seen on a starved machine as a bare
	// "deadline exceeded") is the path's trouble like a stall: move, do
	// not abort. The app's own body failing is not.
	if !f.pathTrouble(err) {
		return false, false
	}
	var ae *quic.ApplicationError
	if errors.As(err, &ae) && !ae.Remote && ae.ErrorCode == wire.CodeStalled && f.free > 0 {
		f.free-- // a sibling stream's stall closed this connection under us
		uncounted = true
	}
	c.migrations.Add(1)
	c.cfg.Log.Warn("path failed; moving the stream", "method", f.r.Method, "url", f.r.URL.String(), "path", p.Name, "delivered", f.delivered, "err", err)
	return true, uncounted
}

// pathTrouble: err is the path's trouble (a stall, the connection, a
// stream deadline), not the app's nor the request's end.
func (f *fetch) pathTrouble(err error) bool {
	var be *idlebody.AppError
	return f.ctx.Err() == nil && !errors.As(err, &be) && (errors.Is(err, errStalled) || isConnErr(err) || idlebody.IsTimeout(err))
}

// fail answers the app after the last attempt failed with err: a status
// that says whose trouble it was while no head went out, else a reset.
func (f *fetch) fail(err error) error {
	if !f.headersSent {
		// Terse for the app; the detail goes to the log (ServeHTTP).
		var be *idlebody.AppError
		switch {
		case errors.Is(err, errRefused):
			f.w.Header().Set("Retry-After", "1")
			http.Error(f.w, "ct-client: ct-server busy (per-client limits)", http.StatusServiceUnavailable)
		case errors.Is(err, idlebody.ErrIdle):
			f.w.Header().Set("Connection", "close")
			http.Error(f.w, "ct-client: request body idle", http.StatusRequestTimeout)
		case errors.As(err, &be):
			f.w.Header().Set("Connection", "close")
			http.Error(f.w, "ct-client: malformed request body", http.StatusBadRequest)
		case errors.Is(err, errHeadTimeout):
			http.Error(f.w, "ct-client: no response from ct-server", http.StatusGatewayTimeout)
		case f.ctx.Err() != nil:
			err = f.givenUp(err)
			http.Error(f.w, "ct-client: request cancelled", http.StatusBadGateway)
		default:
			http.Error(f.w, "ct-client: ct-server unreachable", http.StatusBadGateway)
		}
		return err
	}
	// Headers went out: the only honest signal left is to cut the
	// connection, so the app sees a truncated response, not a short one.
	if f.ctx.Err() != nil {
		err = f.givenUp(err)
	}
	if _, piece := f.w.(*bufferWriter); !piece { // a stripe piece's failure is the stripe's to report
		f.c.cfg.Log.Warn("aborting the app connection", "method", f.r.Method, "url", f.r.URL.String(), "delivered", f.delivered, "err", err)
	}
	f.c.abortApp(f.w, f.r)
	return err // not reached
}

// givenUp says that err came of the fetch's context ending, and why it
// ended (net/http gives no cause: context.Canceled).
func (f *fetch) givenUp(err error) error {
	cause := context.Cause(f.ctx)
	if errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", errGivenUp, err)
	}
	return fmt.Errorf("%w (%v): %w", errGivenUp, cause, err)
}

// leg is one attempt of a fetch: one request on one stream of one path.
// Its request (head and body) goes out by itself (send) while the response
// is read (head, accept, copy): full duplex.
type leg struct {
	f     *fetch
	p     *path
	conn  *quic.Conn
	out   *http.Request
	start int64       // first body byte asked for
	plan  *stripePlan // non-nil: the response may go on striped

	str    *quic.Stream
	opened time.Time
	watch  *stallWatch
	load   int64 // response bytes counted as outstanding on p
	skip   int64 // bytes of a 200 before start, to drop

	sent     chan struct{} // closed when send ends
	sendErr  error         // send's failure (set before sent closes)
	headMu   sync.Mutex
	gotHead  bool
	headLate bool
	headWait *time.Timer
}

// run returns the body bytes it wrote to the app.
func (l *leg) run() (int64, error) {
	f, c, p := l.f, l.f.c, l.p
	release, err := c.streamSlot(f.ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	p.requests.Add(1)
	prio := f.sr.Priority
	p.addLoad(0, 1, prio)
	defer func() { p.addLoad(-l.load, -1, -prio) }()

	octx, cancel := context.WithTimeout(f.ctx, c.cfg.StallTimeout)
	err = l.open(octx)
	cancel()
	if err != nil && f.ctx.Err() != nil {
		// Its owner gave the request up (the app hung up; a stripe's
		// piece whose other copy landed or whose stripe ended, which can
		// happen just as its leg starts): that says nothing of the path.
		// quic-go fails the open at once on a done context.
		return 0, err
	}
	if err != nil {
		c.suspect(p)
		return 0, fmt.Errorf("%w: open stream: %v", errStalled, err)
	}
	l.opened = time.Now()
	openedBytes := l.conn.ConnectionStats().BytesReceived
	stop := context.AfterFunc(f.ctx, func() { l.str.CancelRead(wire.CodeOK); l.str.CancelWrite(wire.CodeOK) })
	defer stop()
	l.send()
	defer l.endSend()
	n, err := l.receive()
	if _, piece := f.w.(*bufferWriter); piece && (err == nil || f.ctx.Err() != nil) {
		l.pieceSample(openedBytes) // whole, or cancelled: its other copy won
	}
	if err == nil {
		l.awaitEnd()
	}
	return n, err
}

// awaitEnd waits, up to the stall timeout, for ct-server's end of a whole
// response's stream before the request's max_streams slot (streamSlot) is
// given back: ct-server gives its slot back before it closes the stream
// (handleStream), while a response is whole at its Content-Length, a
// moment before. A slot given back at the Content-Length let the next
// request reach ct-server while the last one still counted there, and it
// was refused (TestServerLimits: 2 of about 70 runs under -race). The app
// has its bytes already; only the slot waits, and the end comes with or
// just after the last bytes.
func (l *leg) awaitEnd() {
	l.str.SetReadDeadline(time.Now().Add(l.f.c.cfg.StallTimeout))
	io.Copy(io.Discard, io.LimitReader(l.str, trailingMax))
}

// trailingMax bounds what awaitEnd reads past a whole response: nothing
// is due there but the stream's end.
const trailingMax = 4 << 10

// open opens the leg's stream, through the fetch's claim if it has one:
// its request then asks for the range claimed, with the wire.HdrPiece of
// the stream's connection (pieceMark), which may reach another ct-server
// than the path's connection the piece was taken for.
func (l *leg) open(ctx context.Context) error {
	f := l.f
	if f.claim == nil {
		var err error
		l.str, err = l.conn.OpenStreamSync(ctx)
		return err
	}
	err := f.claim(func() (err error) {
		l.str, err = l.conn.OpenStreamSync(ctx)
		return err
	})
	if err == nil {
		l.out, l.start = f.request()
		if mark := pieceMark(l.p.inOrderOn(l.conn), f.next); mark != "" {
			l.out.Header.Set(wire.HdrPiece, mark)
		}
	}
	return err
}

// abort resets both directions of the stream: the attempt is over.
func (l *leg) abort() {
	l.str.CancelRead(wire.CodeStalled)
	l.str.CancelWrite(wire.CodeStalled)
}

// send writes the request on the stream in the background; a failure
// other than ct-server refusing the rest (STOP_SENDING: its answer
// follows) stops the response side too. Each write may wait for flow
// control up to idlebody.Timeout.
func (l *leg) send() {
	l.sent = make(chan struct{})
	if l.out.Body == nil {
		l.armHead()
	}
	go func() {
		iw := &idleWriter{s: l.str}
		err := l.out.WriteProxy(iw)
		if b := l.f.body; b != nil && err != nil && b.Failure() != nil {
			err = b.Failure()
		} else if err != nil && iw.err != nil {
			err = iw.err // the stream failed, whatever net/http called it
		}
		var se *quic.StreamError
		if errors.As(err, &se) && se.Remote {
			err = nil // a refusal: its answer comes on the other direction
		} else if err == nil {
			l.str.Close()
		}
		l.sendErr = err
		close(l.sent)
		if err != nil {
			l.str.CancelRead(wire.CodeStalled) // wakes the response side
		} else if l.out.Body != nil {
			l.armHead()
		}
	}()
}

// endSend stops a send still going on (the response ended or failed
// first) and waits for it.
func (l *leg) endSend() {
	select {
	case <-l.sent:
	default:
		if b := l.f.body; b != nil {
			b.Stop()
		}
		l.str.CancelWrite(wire.CodeStalled)
		<-l.sent
	}
	l.headMu.Lock()
	l.gotHead = true
	if l.headWait != nil {
		l.headWait.Stop()
	}
	l.headMu.Unlock()
}

// sending says the request is still going out.
func (l *leg) sending() bool {
	select {
	case <-l.sent:
		return false
	default:
		return true
	}
}

// armHead starts ResponseHeadTimeout once the request is out.
func (l *leg) armHead() {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	if l.gotHead {
		return
	}
	l.headWait = time.AfterFunc(ResponseHeadTimeout, func() {
		l.headMu.Lock()
		late := !l.gotHead
		l.headLate = late
		l.headMu.Unlock()
		if late {
			l.str.CancelRead(wire.CodeStalled)
		}
	})
}

// cause is the error to report for err on the response side: the
// request's own failure or the head timeout, when one of them woke it.
func (l *leg) cause(err error) error {
	first := false // the request's side failed first, and woke this one
	select {
	case <-l.sent:
		first = l.sendErr != nil
	default:
	}
	// Stop and wait for the sending side: the app's body failing cancels
	// the request's context (net/http), which may wake this side before
	// the failure reaches the sender.
	l.endSend()
	var be *idlebody.AppError
	if first || errors.As(l.sendErr, &be) {
		return l.sendErr
	}
	l.headMu.Lock()
	late := l.headLate
	l.headMu.Unlock()
	if late {
		return fmt.Errorf("%w within %v", errHeadTimeout, ResponseHeadTimeout)
	}
	return l.watch.explain(err)
}

// receive reads the response, hands its head to the app (or checks it
// continues what the app has), and copies the body.
func (l *leg) receive() (n int64, err error) {
	f := l.f
	l.watch = &stallWatch{c: f.c, p: l.p, conn: l.conn, ctx: f.ctx, sending: l.sending}
	hr := wire.NewHeadReader(l.watch.reader(l.str))
	resp, err := hr.ReadResponse(l.out)
	l.headMu.Lock()
	l.gotHead = true
	l.headMu.Unlock()
	if err != nil {
		l.abort()
		return 0, l.failed(err)
	}
	l.noteSendStats(resp.Header)
	defer resp.Body.Close() // after abort: Close would read the rest
	defer func() {
		if err != nil {
			l.abort()
		}
	}()
	if !f.stalledAt.IsZero() {
		// The gap a migration cost: last byte on the old path to this
		// head (for striped pieces too, whose retries are not resumes).
		f.c.resumeNanos.Store(int64(time.Since(f.stalledAt)))
		f.stalledAt = time.Time{}
	}
	if err := l.accept(resp); err != nil {
		return 0, err
	}
	return l.copy(resp)
}

// noteSendStats takes ct-server's sending counters (wire.HdrSendStats)
// off the response head, and keeps them for the automatic lanes
// (lanes.go) when they are on.
func (l *leg) noteSendStats(h http.Header) {
	v := h.Get(wire.HdrSendStats)
	if v == "" {
		return
	}
	h.Del(wire.HdrSendStats)
	if l.f.c.cfg.FixedLanes {
		return
	}
	if st, err := wire.ParseSendStats(v); err == nil {
		l.p.noteSendStats(l.conn, st)
	}
}

// failed records when a response side that failed got its last byte (the
// start of the gap a migration then costs) and says why it failed.
func (l *leg) failed(err error) error {
	err = l.cause(err)
	if errors.Is(err, errStalled) || isConnErr(err) || idlebody.IsTimeout(err) {
		l.f.stalledAt = l.watch.last
	}
	return err
}

// accept takes the response head: to the app when none went out yet,
// else checked to continue exactly where the app's copy stops.
func (l *leg) accept(resp *http.Response) error {
	f, out := l.f, l.out
	refused := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
	if f.headersSent {
		if refused {
			return fmt.Errorf("resume: %w: status %d", errRefused, resp.StatusCode)
		}
		// The shared resume check (internal/resume): same version, from
		// the byte asked for, or nothing is appended.
		st := resume.FromHeader(f.w.Header())
		if v := out.Header.Get("If-Range"); v != "" {
			st.Validator = v
		}
		skip, err := st.Check(resp, l.start)
		if err != nil {
			return err
		}
		l.skip = skip
	} else {
		if refused && resp.Header.Get(wire.HdrError) != "" && resp.Header.Get("Retry-After") != "" &&
			(out.Method == http.MethodGet || out.Method == http.MethodHead) && out.Body == nil {
			// ct-server's own limits refused it (not the app-server:
			// ct-server strips Ct-Error from upstream responses): wait
			// for a slot.
			return fmt.Errorf("%w: %d %s", errRefused, resp.StatusCode, resp.Header.Get(wire.HdrError))
		}
		h := f.w.Header()
		wire.RemoveHopHeaders(resp.Header)
		for k, vs := range resp.Header {
			h[k] = vs
		}
		if resp.ContentLength >= 0 && out.Method != http.MethodHead {
			h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
		}
		f.w.WriteHeader(resp.StatusCode)
		f.headersSent = true
		if l.plan != nil && f.c.stripeable(resp) {
			l.plan.total = resp.ContentLength
			l.plan.run = f.c.startStripe(f.w, f.r, f.hdr, f.sr, l.p.id, f.c.cfg.StripeChunk, resp.ContentLength)
		}
	}
	if resp.ContentLength > 0 {
		l.load = resp.ContentLength - l.skip
		l.p.addLoad(l.load, 0, 0)
	}
	return nil
}

// copy writes the response body to the app; it returns the bytes written.
// An app's writes are batched (coalescer); a striped piece's buffer takes
// them as they come, which keeps its path's rate estimate current.
func (l *leg) copy(resp *http.Response) (n int64, err error) {
	f, c, p := l.f, l.f.c, l.p
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	write := func(b []byte) error { _, err := f.w.Write(b); return err }
	if _, piece := f.w.(*bufferWriter); !piece {
		co := newCoalescer(f.w)
		write = co.write
		defer func() {
			if werr := co.stop(); werr != nil && (err == nil || errors.Is(err, errStriped)) {
				err = fmt.Errorf("write to app: %w", werr)
			}
		}()
	}
	var sampleBytes int64
	sampleStart, sampleFrom := time.Now(), l.arrived()
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			l.watch.last = time.Now()
			if sampleBytes += int64(k); sampleBytes >= rateSampleBytes {
				arrived := l.arrived()
				p.rateSample(arrived-sampleFrom, l.watch.last.Sub(sampleStart))
				sampleBytes, sampleStart, sampleFrom = 0, l.watch.last, arrived
			}
			chunk := buf[:k]
			if l.load > 0 {
				d := min(l.load, int64(k))
				l.load -= d
				p.addLoad(-d, 0, 0)
			}
			if l.skip > 0 {
				d := min(l.skip, int64(len(chunk)))
				chunk, l.skip = chunk[d:], l.skip-d
			}
			striped := false
			if l.plan != nil && l.plan.run != nil {
				// The stripe fetches from cut on: stop there.
				cut := l.plan.run.original(n, int64(len(chunk)))
				striped = n+int64(len(chunk)) >= cut
				if striped {
					chunk = chunk[:max(0, cut-n)]
				}
			}
			if len(chunk) > 0 {
				if werr := write(chunk); werr != nil {
					return n, fmt.Errorf("write to app: %w", werr)
				}
				n += int64(len(chunk))
			}
			if striped {
				return n, errStriped
			}
		}
		if errors.Is(rerr, io.EOF) {
			c.cfg.Scheduler.Done(p.id, n, time.Since(l.opened))
			return n, nil
		}
		if rerr != nil {
			return n, l.failed(rerr)
		}
	}
}

// arrived is the bytes the leg's connection has received, counted as
// they arrive (quic-go's ConnectionStats, QUIC's headers included, as
// pieceSample counts them), which copy's rate samples difference. Not
// the path's bytes read (path.bytes): a read counts bytes that waited in
// a stream's receive buffer while its reader was elsewhere at the
// instant they come out of it, in one burst. On fake time such reads
// gave samples of 256 KiB in 0–0.8 ms (320 MB/s) on the 6.25 MB/s path
// of the matrix's halving row (100/20 + 50/30 Mbit/s/ms); folded into
// the rate (rateAlpha), that path still read 12–18 MB/s after three
// warm-up stripes in 5 of 16 runs, the measured stripe took it for the
// swiftest and gave it the object's first 5 MB in order, and the app
// waited on it while the faster path idled: 0.73–0.86 of the offered
// sum against 0.94–0.97 (2026-12-01; TestPathRateNotFromBurst).
func (l *leg) arrived() int64 { return int64(l.conn.ConnectionStats().BytesReceived) }

// pieceSample makes a stripe's piece one rate sample of its path as its
// request ends, whole or cancelled because its other copy landed first:
// the bytes the path received, on all its streams, from the piece's
// request on, over that time less a round trip (before which no byte of
// it could come), when that is tailRounds round trips or longer and the
// bytes at least pieceSampleBytes — the path was then busy and paced by
// its rate, not by one burst. A slow path's pieces are smaller than
// rateSampleBytes (copy's samples), and cancelled where they are slow,
// often before their head came (the path's queue still held the bytes of
// an earlier piece or of an original past its cut), so without it the
// client never measured such a path: it guessed its rate from the
// congestion window (a 0.5 Mbit/s path 25 ms away at 1.3–1.5 MB/s) and
// placed requests there (pathchoice's arrival). Pieces only: read into
// memory, they are not paced by an app.
func (l *leg) pieceSample(openedBytes uint64) {
	st := l.conn.ConnectionStats()
	rtt := st.SmoothedRTT
	n, d := int64(st.BytesReceived-openedBytes), time.Since(l.opened)-rtt
	if n < pieceSampleBytes || rtt <= 0 || d < tailRounds*rtt {
		return
	}
	l.p.rateSample(n, d)
}

// A piece makes a rate sample (pieceSample) when its path received at
// least pieceSampleBytes while it ran tailRounds round trips: a loss
// recovery stretches a short piece by a round trip or two, which at four
// no longer reads a fast lossy path as a slow one.
const (
	pieceSampleBytes = 16 << 10
	tailRounds       = 4
)

// idleWriter writes to a stream with a deadline per write: a write that
// waits idlebody.Timeout for flow control (ct-server not reading, or the
// path gone without the stall watch noticing) fails.
// idleWriter writes a request on its stream, each write waiting for flow
// control up to idlebody.Timeout. It keeps its first failure: net/http
// reports a write that failed while it copied the body as the body's read
// error, and the stream failing is the path's trouble, not the app's.
type idleWriter struct {
	s   *quic.Stream
	err error
}

func (w *idleWriter) Write(b []byte) (int, error) {
	w.s.SetWriteDeadline(time.Now().Add(idlebody.Timeout))
	n, err := w.s.Write(b)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// WriteByte makes idleWriter an io.ByteWriter, which keeps
// http.Request.Write from buffering the body in 4 KiB: a slow body's bytes
// go out as they come (the stream packs them into packets anyway).
func (w *idleWriter) WriteByte(b byte) error {
	_, err := w.Write([]byte{b})
	return err
}
