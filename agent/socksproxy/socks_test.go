package socksproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/socks5"
	"github.com/hetquic/hetquic/agent/wire"
)

// fakeHost is a client without paths: Connect answers as connect says,
// Pick reports each flow's app and target on picks and fails.
type fakeHost struct {
	ctx     context.Context
	wg      sync.WaitGroup
	connect func(app, target string) (func(net.Conn, []byte, io.Reader), int)
	picks   chan string
	routes  wire.DatagramRoutes
}

func (h *fakeHost) Context() context.Context                   { return h.ctx }
func (h *fakeHost) Go(f func())                                { h.wg.Go(f) }
func (h *fakeHost) Log() *slog.Logger                          { return slog.New(slog.DiscardHandler) }
func (h *fakeHost) App(target string, local net.Addr) string   { return "app:" + target }
func (h *fakeHost) StreamSlot(context.Context) (func(), error) { return func() {}, nil }
func (h *fakeHost) Datagrams() *wire.DatagramRoutes            { return &h.routes }
func (h *fakeHost) StallTimeout() time.Duration                { return time.Second }
func (h *fakeHost) MaxAttempts() int                           { return 1 }

func (h *fakeHost) Connect(_ context.Context, app, target string) (func(net.Conn, []byte, io.Reader), int) {
	return h.connect(app, target)
}

var errNoPath = errors.New("no path (fake)")

func (h *fakeHost) Pick(_ context.Context, app string, _ map[int]bool) (int, *quic.Conn, error) {
	h.picks <- app
	return 0, nil, errNoPath
}

// serve runs Serve for h on a loopback port until the test ends, and
// checks that Serve and every connection's goroutine end then.
func serve(t *testing.T, h *fakeHost) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	if h.picks == nil {
		h.picks = make(chan string, 16)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(l, h) }()
	t.Cleanup(func() {
		cancel()
		l.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve after its host closed: %v, want nil", err)
		}
		h.wg.Wait()
	})
	return l.Addr().String()
}

// exchange sends b on a new connection to addr and returns all it reads
// until the proxy closes the connection.
func exchange(t *testing.T, addr string, b []byte) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(b)
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("% x: %v", b, err)
	}
	return got
}

// greeting is a SOCKS5 greeting that offers "no authentication".
var greeting = []byte{socks5.Version, 1, socks5.NoAuth}

// connectReq is a SOCKS5 CONNECT to 127.0.0.1:port.
func connectReq(port byte) []byte {
	return []byte{socks5.Version, socks5.CmdConnect, 0, socks5.AtypIPv4, 127, 0, 0, 1, 0, port}
}

// TestServeAnswers: each refusal gets its RFC 1928 answer and the
// connection closed; ct-client's HTTP status of a failed tunnel becomes
// the SOCKS5 reply code; a port-0 target never reaches the client.
func TestServeAnswers(t *testing.T) {
	var (
		mu     sync.Mutex // the proxy's goroutines read status, append to asked
		status int
		asked  []string
	)
	h := &fakeHost{connect: func(app, target string) (func(net.Conn, []byte, io.Reader), int) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, target)
		return nil, status
	}}
	addr := serve(t, h)
	ok := []byte{socks5.Version, socks5.NoAuth}
	for _, c := range []struct {
		name   string
		send   []byte
		status int // what Connect answers
		want   []byte
		asked  string // the target Connect saw ("": not called)
	}{
		{"SOCKS4", []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, 0, nil, ""},
		{"no acceptable method", []byte{5, 1, 2}, 0, []byte{5, 0xff}, ""},
		{"BIND", append(greeting, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80), 0, append(ok, socks5.Reply(socks5.CmdUnsupported)...), ""},
		{"address type 9", append(greeting, 5, 1, 0, 9), 0, append(ok, socks5.Reply(socks5.AtypUnsupported)...), ""},
		{"port 0", append(greeting, connectReq(0)...), 0, append(ok, socks5.Reply(socks5.Refused)...), ""},
		{"not allowed (403)", append(greeting, connectReq(80)...), 403, append(ok, socks5.Reply(socks5.Code(403))...), "127.0.0.1:80"},
		{"unreachable (502)", append(greeting, connectReq(81)...), 502, append(ok, socks5.Reply(socks5.Code(502))...), "127.0.0.1:81"},
	} {
		mu.Lock()
		status, asked = c.status, nil
		mu.Unlock()
		got := exchange(t, addr, c.send)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: got % x, want % x and the connection closed", c.name, got, c.want)
		}
		mu.Lock()
		saw := strings.Join(asked, " ")
		mu.Unlock()
		if saw != c.asked {
			t.Errorf("%s: Connect asked for %q, want %q", c.name, saw, c.asked)
		}
	}
}

// TestConnectAttach: an accepted CONNECT hands the connection to the
// tunnel with the SOCKS5 success reply, and bytes the app sent right
// after its request (pipelined) come first.
func TestConnectAttach(t *testing.T) {
	apps := make(chan string, 1)
	h := &fakeHost{connect: func(app, target string) (func(net.Conn, []byte, io.Reader), int) {
		apps <- app
		return func(conn net.Conn, reply []byte, first io.Reader) {
			conn.Write(reply)
			io.Copy(conn, first) // an echo tunnel
			conn.Close()
		}, 0
	}}
	addr := serve(t, h)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(append(append(greeting, connectReq(80)...), "early"...))
	want := append([]byte{socks5.Version, socks5.NoAuth}, socks5.Reply(socks5.OK)...)
	got := make([]byte, len(want)+len("early"))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, append(want, "early"...)) {
		t.Fatalf("got % x (%v), want the replies then the early bytes", got, err)
	}
	conn.Write([]byte("later"))
	conn.(*net.TCPConn).CloseWrite()
	rest, err := io.ReadAll(conn)
	if err != nil || string(rest) != "later" {
		t.Fatalf("after the replies: %q %v", rest, err)
	}
	if gotApp := <-apps; gotApp != "app:127.0.0.1:80" {
		t.Fatalf("app %q, want the host's name for the target", gotApp)
	}
}

// TestAssociate: a UDP ASSOCIATE answers with its relay's address; only
// the app that sent first is relayed, a datagram with a bad header is
// dropped, each datagram asks for its target's flow (a flow that cannot
// open is not kept, and the relay goes on), and the association ends with
// its control connection.
func TestAssociate(t *testing.T) {
	h := &fakeHost{}
	addr := serve(t, h)
	ctrl, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctrl.Write(append(greeting, socks5.Version, socks5.CmdUDP, 0, socks5.AtypIPv4, 0, 0, 0, 0, 0, 0))
	r := make([]byte, 2+10)
	if _, err := io.ReadFull(ctrl, r); err != nil || r[3] != socks5.OK || r[5] != socks5.AtypIPv4 {
		t.Fatalf("UDP ASSOCIATE: % x %v", r, err)
	}
	relay := &net.UDPAddr{IP: net.IP(r[6:10]), Port: int(r[10])<<8 | int(r[11])}
	app, other := listenUDP(t), listenUDP(t)
	header := func(port byte) []byte { return []byte{0, 0, 0, socks5.AtypIPv4, 127, 0, 0, 1, 0, port} }
	app.WriteToUDP(append(header(53), "q1"...), relay)
	if got := <-h.picks; got != "app:udp" {
		t.Fatalf("flow opened for %q, want the association's app", got)
	}
	other.WriteToUDP(append(header(54), "q2"...), relay)    // not the app that associated
	app.WriteToUDP([]byte{0, 0, 1, socks5.AtypIPv4}, relay) // fragmented, short: dropped
	app.WriteToUDP(append(header(53), "q3"...), relay)      // q1's target again: its flow was not kept
	<-h.picks
	ctrl.Close()
	h.wg.Wait() // the association's goroutines end with ctrl, every datagram before q3 read
	if n := len(h.picks); n != 0 {
		t.Fatalf("%d flows too many asked for: the other sender's or the bad header's datagram was relayed", n)
	}
}

func listenUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
