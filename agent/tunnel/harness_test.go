package tunnel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/internal/memquic"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/tunnelgate"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
)

// The tests' in-memory network: a fake ct-server at ctAddr, the client's
// paths at 10.8.0.1, 10.8.0.2, each way oneWay apart.
var ctAddr = netip.MustParseAddrPort("10.9.0.1:443")

// oneWay is memnet's delay from every address: a 20 ms round trip, so
// that fake time moves as the tunnel works.
const oneWay = 10 * time.Millisecond

// hung bounds, in the bubble's fake time, how long a test waits for the
// app's bytes: a tunnel that lost some would keep QUIC's timers going
// forever, never a deadlock that synctest reports. Far above any test's
// own length (seconds); it costs no real time.
const hung = time.Minute

// head is a CONNECT ct-server received: when, from which path, and its
// header.
type head struct {
	at   time.Time
	from netip.Addr
	h    http.Header
}

// fakeCT is ct-server's tunnel side, enough for the client's: a session
// per "new" CONNECT whose down direction echoes every byte received up;
// a resume answers with the up bytes received (Ct-Resume-Up) and sends
// the echo again from Ct-Resume-Down. refuse, when set, answers a resume
// with that status; upAnswer, when set, replaces Ct-Resume-Up.
type fakeCT struct {
	mu       sync.Mutex
	sessions map[string]*session
	heads    []head
	refuse   int
	upAnswer string
}

type session struct {
	up  []byte // every byte received up, in order: also the down stream
	gen int    // the attachment that may append (the latest CONNECT)
}

// handle runs one CONNECT stream of conn.
func (s *fakeCT) handle(conn *quic.Conn, str *quic.Stream) {
	defer str.CancelRead(wire.CodeOK)
	hr := wire.NewHeadReader(str)
	req, err := hr.ReadRequest()
	if err != nil {
		return
	}
	sess, gen, answer := s.attach(req.Header, memquic.From(conn))
	if _, err := io.WriteString(str, answer); err != nil || sess == nil {
		str.Close()
		return
	}
	buf := make([]byte, 16<<10)
	r := hr.Rest()
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.mu.Lock()
			if sess.gen != gen { // a resume took the session
				s.mu.Unlock()
				return
			}
			sess.up = append(sess.up, buf[:n]...)
			s.mu.Unlock()
			if _, werr := str.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				str.Close() // the app's FIN, echoed
			}
			return
		}
	}
}

// attach records a CONNECT's head and returns its session, attachment
// and the answer to send (the head, then on a resume the echo from
// Ct-Resume-Down); a nil session: refused.
func (s *fakeCT) attach(h http.Header, from netip.Addr) (*session, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heads = append(s.heads, head{time.Now(), from, h})
	id := h.Get(wire.HdrSession)
	if id == "new" {
		id = fmt.Sprintf("%032x", len(s.sessions)+1)
		s.sessions[id] = &session{}
		return s.sessions[id], 0, "HTTP/1.1 200 OK\r\n" + wire.HdrSession + ": " + id + "\r\n\r\n"
	}
	id, down, err := wire.ParseResume(h)
	sess := s.sessions[id]
	if err != nil || sess == nil || down > int64(len(sess.up)) {
		return nil, 0, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
	}
	if s.refuse != 0 {
		return nil, 0, "HTTP/1.1 " + strconv.Itoa(s.refuse) + " Refused\r\nContent-Length: 0\r\n\r\n"
	}
	sess.gen++
	up := cmp.Or(s.upAnswer, strconv.Itoa(len(sess.up)))
	return sess, sess.gen, "HTTP/1.1 200 OK\r\n" + wire.HdrResumeUp + ": " + up + "\r\n\r\n" + string(sess.up[down:])
}

// received is the session's up bytes so far.
func (s *fakeCT) received() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		return append([]byte(nil), sess.up...)
	}
	return nil
}

func (s *fakeCT) headsSeen() []head {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]head(nil), s.heads...)
}

// fakePath is a client path on memnet: its transport, its connection
// (none while cut) and when it may take work again (the client's
// failback hold).
type fakePath struct {
	id    int
	addr  netip.Addr
	tr    *quic.Transport
	srv   *memquic.Server
	carry atomic.Int64

	mu       sync.Mutex
	conn     *quic.Conn
	usableAt time.Time
}

func (p *fakePath) ID() int                           { return p.id }
func (p *fakePath) Name() string                      { return "p" + strconv.Itoa(p.id) }
func (p *fakePath) Carry(delta, _ int)                { p.carry.Add(int64(delta)) }
func (p *fakePath) Reader(str *quic.Stream) io.Reader { return str }

func (p *fakePath) Usable(now time.Time) (*quic.Conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn, p.conn != nil && !now.Before(p.usableAt)
}

// live is the path's connection if it has one.
func (p *fakePath) live() *quic.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn
}

// dial connects the path; it may take work after hold.
func (p *fakePath) dial(t *testing.T, hold time.Duration) {
	t.Helper()
	conn, err := p.srv.Dial(context.Background(), p.tr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.conn, p.usableAt = conn, time.Now().Add(hold)
	p.mu.Unlock()
}

// cut closes the path's connection: its streams fail at once.
func (p *fakePath) cut() {
	p.mu.Lock()
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	if conn != nil {
		conn.CloseWithError(0, "cut")
	}
}

// fakeHost is the client as a tunnel's Host: Pick takes the first path
// with a connection not in avoid, waiting for one (as the client waits
// for a path to come up) until its context ends.
type fakeHost struct {
	ctx                     context.Context
	paths                   []*fakePath
	moved, aborted, resumed atomic.Int64
}

var errNoPath = errors.New("no path (fake)")

func (h *fakeHost) Pick(ctx context.Context, _ pathchoice.Request, avoid map[int]bool) (Path, *quic.Conn, error) {
	for {
		for _, p := range h.paths {
			if conn := p.live(); conn != nil && !avoid[p.id] {
				return p, conn, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, errNoPath
		case <-time.After(pickPoll):
		}
	}
}

// pickPoll is how often fakeHost.Pick looks for a path while none is up
// (fake time: the client is woken by a change instead).
const pickPoll = 10 * time.Millisecond

// outageHold is fakeHost's OutageHold: longer than one stream's open
// deadline (5 s, Open), so that a test tells the hold from one attempt.
const outageHold = 12 * time.Second

func (h *fakeHost) Context() context.Context    { return h.ctx }
func (h *fakeHost) StallTimeout() time.Duration { return time.Second }
func (h *fakeHost) MaxAttempts() int            { return 3 }
func (h *fakeHost) OutageHold() time.Duration   { return outageHold }
func (h *fakeHost) Log() *slog.Logger           { return slog.New(slog.DiscardHandler) }
func (h *fakeHost) Moved()                      { h.moved.Add(1) }
func (h *fakeHost) Resumed(time.Duration)       { h.resumed.Add(1) }
func (h *fakeHost) Aborted()                    { h.aborted.Add(1) }

// rig is a fake ct-server and two paths on memnet, both connected and
// usable; it must be made inside the synctest bubble that uses it.
type rig struct {
	n     *memnet.Network
	ct    *fakeCT
	host  *fakeHost
	paths []*fakePath
}

func newRig(t *testing.T) *rig {
	t.Helper()
	n := memnet.New()
	srv := memquic.Listen(t, n, ctAddr)
	n.SetDelay(ctAddr.Addr(), oneWay)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{n: n, ct: &fakeCT{sessions: map[string]*session{}}, host: &fakeHost{ctx: ctx}}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(nil, r.ct.handle) }()
	for i := range 2 {
		a := netip.AddrFrom4([4]byte{10, 8, 0, byte(1 + i)})
		n.SetDelay(a, oneWay)
		p := &fakePath{id: i, addr: a, tr: memquic.Transport(t, n, netip.AddrPortFrom(a, 0)), srv: srv}
		p.dial(t, 0)
		r.paths = append(r.paths, p)
	}
	r.host.paths = r.paths
	t.Cleanup(func() { // before memquic's: the sockets close after
		cancel()
		for _, p := range r.paths {
			p.cut()
		}
		srv.Close()
		<-served
	})
	return r
}

// open opens a tunnel on path p and runs it for the app's end of a pipe,
// returned with a channel closed when Run has returned.
func (r *rig) open(t *testing.T, p *fakePath) (*Tunnel, net.Conn, <-chan struct{}) {
	t.Helper()
	slot, err := tunnelgate.New(1, time.Minute, nil).Acquire(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	tn := New(r.host, "app.example:80", pathchoice.Request{App: "app", Priority: 1}, slot)
	str, hr, resp, err := tn.Open(context.Background(), p, p.live(), 0)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open: %v %v", resp, err)
	}
	app, end := net.Pipe()
	app.SetDeadline(time.Now().Add(hung))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tn.Run(end, resp.Header.Get(wire.HdrSession), str, hr.Rest(), p, end, func(int) {})
	}()
	return tn, app, done
}

// echo writes b to app and reads its echo back, checking it.
func echo(t *testing.T, app net.Conn, b []byte) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { _, err := app.Write(b); errc <- err }()
	got := make([]byte, len(b))
	if _, err := io.ReadFull(app, got); err != nil || string(got) != string(b) {
		t.Fatalf("echo of %d bytes: %d back, intact %v, %v", len(b), len(got), string(got) == string(b), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// pattern is n bytes that differ from chunk to chunk (seed).
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/251)
	}
	return b
}
