package idlebody

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// readAll reads body to its end or first error, with the time it took.
func readAll(body *Body) (int64, time.Duration, error) {
	start := time.Now()
	n, err := io.Copy(io.Discard, body)
	return n, time.Since(start), err
}

// TestBodyCutWhenIdle: a body that stops short of ProgressBytes is cut
// Timeout after its window began, as the app's failure.
func TestBodyCutWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app, peer := net.Pipe()
		defer app.Close()
		defer peer.Close()
		go peer.Write(make([]byte, ProgressBytes/2)) // then silence
		body := New(app, app.SetReadDeadline)
		n, took, err := readAll(body)
		var ae *AppError
		if !errors.Is(err, ErrIdle) || !errors.As(err, &ae) || body.Failure() == nil {
			t.Fatalf("after %d bytes: %v (failure %v)", n, err, body.Failure())
		}
		if took != Timeout {
			t.Fatalf("cut after %v, want %v", took, Timeout)
		}
	})
}

// TestBodyMovingNeverCut: a body that makes ProgressBytes every half
// Timeout runs far past Timeout and ends cleanly.
func TestBodyMovingNeverCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app, peer := net.Pipe()
		defer app.Close()
		const windows = 6
		go func() {
			for range windows {
				peer.Write(make([]byte, ProgressBytes))
				time.Sleep(Timeout / 2)
			}
			peer.Close()
		}()
		n, took, err := readAll(New(app, app.SetReadDeadline))
		if err != nil || n != windows*ProgressBytes || took < Timeout {
			t.Fatalf("%d bytes in %v: %v", n, took, err)
		}
	})
}

// oneConnListener hands out one connection, then waits for Close.
type oneConnListener struct {
	conn chan net.Conn
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conn:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error   { close(l.done); return nil }
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// TestEndedBodyLeavesConnAlone: what a handler does with a Body after it
// read the body to its end (a read past the end, as http.Request.Write
// does; Stop, as an attempt that ends does) sets no deadline on the app's
// connection. net/http reads that connection in the background from the
// body's end on, and a deadline passing there cancels the request's
// context as if the app had hung up: the request in flight, and every
// later one on the connection, fails.
func TestEndedBodyLeavesConnAlone(t *testing.T) {
	for name, after := range map[string]func(*Body){
		"read past the end": func(b *Body) { b.Read(make([]byte, 1)) },
		"stop":              (*Body).Stop,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if err := serveOneBody(t, after); err != nil {
					t.Fatalf("the request's context ended within %v of the body's end: %v", 2*Timeout, err)
				}
			})
		})
	}
}

// serveOneBody serves one POST over HTTP/1.1 on a pipe whose handler reads
// the body whole through a Body, calls after, waits twice Timeout and says
// why its request's context ended (nil: it did not).
func serveOneBody(t *testing.T, after func(*Body)) error {
	app, srvSide := net.Pipe()
	defer app.Close()
	l := &oneConnListener{conn: make(chan net.Conn, 1), done: make(chan struct{})}
	l.conn <- srvSide
	cause := make(chan error, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		b := New(r.Body, rc.SetReadDeadline)
		if _, err := io.ReadAll(b); err != nil {
			t.Errorf("body: %v", err)
		}
		after(b)
		time.Sleep(2 * Timeout)
		cause <- context.Cause(r.Context())
		io.WriteString(w, "ok")
	})}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(l) }()
	defer func() { srv.Close(); <-served }()
	go io.WriteString(app, "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n\r\nhello")
	resp, err := http.ReadResponse(bufio.NewReader(app), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return <-cause
}
