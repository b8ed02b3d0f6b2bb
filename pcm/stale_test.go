package pcm

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// lateConn is the server's socket of TestStaleCopyNotCarrier. Armed, it
// keeps back the next datagram of a response's size (heldMin..heldMax
// bytes: not an ACK, nor a path-MTU probe, which is larger), as if it were
// delayed on its path; quic-go's server, hearing no ACK for it, sends its
// data again, so the client completes the response with that copy. release
// sends the kept datagram on to where it was going: a stale copy of a
// response already read, which arrives while the next request is in flight.
type lateConn struct {
	net.PacketConn
	mu       sync.Mutex
	armed    bool
	held     []byte
	to       net.Addr
	released bool
}

// The sizes of a datagram lateConn keeps: one packet of the 800-byte
// response with its head, not an ACK (tens of bytes), nor the 100-byte
// response, nor a path-MTU probe (quic-go's start above 1200 bytes).
const heldMin, heldMax = 700, 1200

func (l *lateConn) WriteTo(b []byte, to net.Addr) (int, error) {
	l.mu.Lock()
	if l.armed && len(b) >= heldMin && len(b) <= heldMax {
		l.armed, l.held, l.to = false, bytes.Clone(b), to
		l.mu.Unlock()
		return len(b), nil
	}
	l.mu.Unlock()
	return l.PacketConn.WriteTo(b, to)
}

func (l *lateConn) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = true
}

// release sends the kept datagram on, if there is one.
func (l *lateConn) release() {
	l.mu.Lock()
	b, to := l.held, l.to
	l.held, l.released = nil, l.released || b != nil
	l.mu.Unlock()
	if b != nil {
		l.PacketConn.WriteTo(b, to)
	}
}

// sentLate reports whether a kept datagram was released.
func (l *lateConn) sentLate() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// TestStaleCopyNotCarrier: a response's packet that arrives late, after
// the server's retransmission completed that response and while the next
// request is in flight on another path, is a stale copy of bytes already
// read: it carries nothing of the next response and must not make its path
// that response's carrier. Through Transport (Client.RoundTrip), which
// cannot learn its stream's ID, the 800 late bytes on the first request's
// path outweighed the second's 100 on its own: the second was reported
// carried by the first's path and gave the selector no sample (issue 29,
// chosen37's trace: the same with a retransmission). Get counts with the
// same ledger. Fake time.
func TestStaleCopyNotCarrier(t *testing.T) {
	apis := []struct {
		name string
		// client returns a GET of a path on cfg's connection.
		client func(t *testing.T, cfg Config) func(path string) (Result, []byte)
	}{
		{"Transport", func(t *testing.T, cfg Config) func(string) (Result, []byte) {
			cfg.Strategy = pathsel.Config{Strategy: pathsel.Polling}
			tr := &Transport{Config: cfg}
			t.Cleanup(func() { tr.Close() })
			hc := &http.Client{Transport: tr}
			return func(path string) (Result, []byte) {
				resp, err := hc.Get("https://" + memServer.String() + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: status %d, %v", path, resp.StatusCode, err)
				}
				res, ok := ResultOf(resp)
				if !ok {
					t.Fatalf("GET %s: no result", path)
				}
				return res, body
			}
		}},
		{"Client.Get", func(t *testing.T, cfg Config) func(string) (Result, []byte) {
			cfg.Selector = polling(2)
			c := dialConfig(t, cfg)
			return func(path string) (Result, []byte) {
				var body bytes.Buffer
				res, err := c.Get(context.Background(), path, &body)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				return res, body.Bytes()
			}
		}},
	}
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { staleCopy(t, api.client) })
		})
	}
}

// staleCopy runs TestStaleCopyNotCarrier's requests on the connection
// that client makes.
func staleCopy(t *testing.T, client func(t *testing.T, cfg Config) func(path string) (Result, []byte)) {
	n := memnet.New()
	late := &lateConn{}
	h := origin.Handler(nil)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Has("hold"):
			late.arm()
		case r.URL.Query().Has("late"):
			late.release()
			time.Sleep(oneWay / 2) // the stale copy leaves before the response, and arrives before it
		}
		h.ServeHTTP(w, r)
	})
	roots := memServe(t, n, handler, func(pc net.PacketConn) net.PacketConn { late.PacketConn = pc; return late })
	get := client(t, memConfig(t, n, 2, Config{Probes: Probes{Off: true}}, roots))
	fetch := func(path string, size int) Result {
		t.Helper()
		res, body := get(path)
		checkPattern(t, body, size)
		t.Logf("GET %s: sent on %d, carried by %d, credited %v", path, res.Path, res.Carrier, res.Credited)
		return res
	}
	fetch("/bytes/100", 100) // the dial
	first := fetch("/bytes/800?hold", 800)
	second := fetch("/bytes/100?late", 100)
	if !late.sentLate() {
		t.Fatal("no datagram was kept back: this test replays nothing")
	}
	if first.Path == second.Path || first.Carrier != first.Path {
		t.Fatalf("first request sent on %d, carried by %d; second sent on %d: want two paths, each carrying its own", first.Path, first.Carrier, second.Path)
	}
	if second.Carrier != second.Path || !second.Credited {
		t.Errorf("second request sent on %d (the server follows), reported carried by %d, credited %v: the stale copy on %d was counted as its carrier",
			second.Path, second.Carrier, second.Credited, first.Path)
	}
}
