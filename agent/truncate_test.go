package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetquic/hetquic/origin"
)

// Truncation: a response or tunnel ct-client cannot
// complete ends with a TCP reset of the app's connection, never a clean
// close after a short body.

// TestStripeUnderLimitMem (stripelimit_mem_test.go) checks striping under a
// stream limit on fake time.

// rawGet sends one request through the proxy on a fresh TCP connection and
// reads until the connection ends: it returns the status line, the body
// bytes read and the error that ended the read.
func rawGet(t *testing.T, proxy, target string) (status string, n int64, err error) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", 0, err
	}
	n, err = io.Copy(io.Discard, resp.Body)
	return resp.Status, n, err
}

// TestAbortedResponseResets: the app-server cuts its response after the
// head; ct-client tries the rest on the other path, which fails the same
// way, and then resets the app's connection (RST), so even an app that
// reads to the end of the connection sees an error.
func TestAbortedResponseResets(t *testing.T) {
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write(make([]byte, 300_000))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer cut.Close()
	ts := startServer(t, "", nil, strings.TrimPrefix(cut.URL, "http://"))
	tc := startClient(t, ts, 2, true, nil)
	status, n, err := rawGet(t, tc.proxy, cut.URL+"/x")
	if !strings.HasPrefix(status, "200") || n >= 1_000_000 {
		t.Fatalf("status %q, %d bytes", status, n)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after %d of 1000000 bytes the read ended with %v, want a connection reset", n, err)
	}
	if tc.aborts.Load() == 0 {
		t.Fatal("ct_client_aborts_total did not count it")
	}
}

// TestTunnelRestartResets: ct-server restarts while a tunnel carries a
// large download; the new server has no such session (404), and the app's
// connection is reset, not closed (the issue: 3.48 of 20 MB and a FIN).
func TestTunnelRestartResets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const total = 20 << 20
	go func() { // an upstream that sends 20 MiB at about 16 MiB/s and closes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				p := &origin.Pattern{Size: total}
				buf := make([]byte, 64<<10)
				for {
					k, _ := p.Read(buf)
					if k == 0 {
						return
					}
					if _, err := c.Write(buf[:k]); err != nil {
						return
					}
					time.Sleep(4 * time.Millisecond)
				}
			}()
		}
	}()
	ts := startServer(t, "", nil, l.Addr().String())
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.ReconnectMax = 200 * time.Millisecond })
	app, err := net.Dial("tcp", tc.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	app.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(app, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", l.Addr(), l.Addr())
	br := bufio.NewReader(app)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	buf := make([]byte, 64<<10)
	var got int64
	for got < 2<<20 {
		k, err := br.Read(buf)
		if err != nil {
			t.Fatalf("before the restart: %v", err)
		}
		got += int64(k)
	}
	addr := ts.addr
	ts.stop(t)
	startServer(t, addr, nil, l.Addr().String())
	for {
		k, err := br.Read(buf)
		got += int64(k)
		if err != nil {
			if got >= total {
				t.Fatalf("the whole tunnel arrived (%d bytes) across a restart that lost its session", got)
			}
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after %d of %d bytes the tunnel ended with %v, want a connection reset", got, total, err)
			}
			t.Logf("reset after %d of %d bytes", got, total)
			return
		}
	}
}
