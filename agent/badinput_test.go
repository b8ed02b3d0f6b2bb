package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
)

// rawProxy sends raw bytes to the proxy and returns the status line (or
// the read error).
func rawProxy(t *testing.T, addr, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, raw)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// TestProxyBadInput: each malformed request gets its one clear status.
// Every head is written at once, so the proxy's HeaderTimeout (the
// default here) plays no part: with it at 300 ms, the 70 kB head of
// "header too large" was cut by the timeout (no 431) at load 17 under
// -race. The cut itself is TestProxyHeadTimeoutMem's, on fake time.
func TestProxyBadInput(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 1, true, nil)
	huge := strings.Repeat("a", wire.MaxHeaderBytes+8192)
	cases := []struct {
		name, raw, want string
	}{
		{"origin-form", "GET /bytes/10 HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
		{"garbage", "GARBAGE\r\n\r\n", "400"},
		{"bad version", "GET http://a/ HTTP/9.9\r\nHost: a\r\n\r\n", "505"},
		{"https scheme", "GET https://" + up.hostport + "/ HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
		{"header too large", "GET http://" + up.hostport + "/bytes/1 HTTP/1.1\r\nHost: x\r\nX-Big: " + huge + "\r\n\r\n", "431"},
		{"connect without port", "CONNECT nohost HTTP/1.1\r\nHost: nohost\r\n\r\n", "400"},
		{"connect empty", "CONNECT  HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
		{"userinfo", "GET http://u:p@" + up.hostport + "/bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
		{"bad port", "GET http://127.0.0.1:99999/ HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rawProxy(t, tc.proxy, c.raw)
			if !strings.Contains(got, " "+c.want+" ") && !strings.HasSuffix(got, " "+c.want) {
				t.Fatalf("got %q, want status %s", got, c.want)
			}
		})
	}
}

// TestProxyHeadTimeoutMem: an app dribbling its request head (a byte
// every 50 ms, never ending it) is cut off at HeaderTimeout, on fake time
// where no load can stretch it, while another app is served meanwhile.
// Dribbling keeps the connection busy, so no idle timeout can be what
// cuts it.
func TestProxyHeadTimeoutMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout, dribble = 300 * time.Millisecond, 50 * time.Millisecond
		m := startMemAgent(t, 1, nil, func(c *ClientConfig) { c.HeaderTimeout = timeout })
		conn, br := m.rawProxy(t)
		dribbled := make(chan struct{})
		defer func() {
			conn.Close()
			<-dribbled // the bubble ends with its goroutines
		}()
		start := time.Now()
		closed := make(chan time.Duration, 1)
		go func() {
			io.Copy(io.Discard, br)
			closed <- time.Since(start)
		}()
		go func() {
			defer close(dribbled)
			head := "GET http://" + memApp + "/bytes/1 HTTP/1.1\r\nHost: slo"
			for i := 0; ; i++ {
				b := byte('o')
				if i < len(head) {
					b = head[i]
				}
				if _, err := conn.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(dribble)
			}
		}()
		resp, err := m.hc.Get("http://" + memApp + "/bytes/100")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("another app not served beside the dribbler: %d", resp.StatusCode)
		}
		select {
		case d := <-closed:
			if d < timeout || d > timeout+dribble {
				t.Fatalf("dribbling app cut off after %v, want %v", d, timeout)
			}
		case <-time.After(10 * timeout):
			t.Fatalf("dribbling app not cut off after %v", 10*timeout)
		}
	})
}

// rawConn dials ct-server as a ct-client would, without the Client.
func rawConn(t *testing.T, ts *testServer, token string) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, ts.addr, &tls.Config{RootCAs: ts.pool.RootCAs, ServerName: "localhost", NextProtos: []string{wire.ALPN}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	if token != "" {
		resp := rawStream(t, conn, "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer "+token+"\r\n\r\n", 0)
		if !strings.Contains(resp, "200") {
			t.Fatalf("hello: %q", resp)
		}
	}
	return conn
}

// rawStream sends raw on a new stream (byte by byte, dribble apart, when
// dribble > 0) and returns the response status line or the error.
func rawStream(t *testing.T, conn *quic.Conn, raw string, dribble time.Duration) string {
	t.Helper()
	str, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		return "error: " + err.Error()
	}
	str.SetDeadline(time.Now().Add(10 * time.Second))
	if dribble > 0 {
		go func() {
			for i := range len(raw) {
				if _, err := str.Write([]byte{raw[i]}); err != nil {
					return
				}
				time.Sleep(dribble)
			}
		}()
	} else {
		io.WriteString(str, raw)
		str.Close()
	}
	line, err := bufio.NewReader(str).ReadString('\n')
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func TestServerBadStreams(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *server.Config) {
		c.HeaderTimeout = 300 * time.Millisecond
		c.HelloTimeout = 500 * time.Millisecond
	}, up.hostport)
	good := startClient(t, ts, 1, true, nil)
	conn := rawConn(t, ts, testToken)
	cases := []struct{ name, raw, want string }{
		{"garbage", "\x00\x01\x02garbage\r\n\r\n", "400"},
		{"second hello", "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\n\r\n", "400"},
		{"ping", "GET /_ct/ping HTTP/1.1\r\nHost: ct\r\n\r\n", "200"},
		{"origin form", "GET /bytes/1 HTTP/1.1\r\nHost: " + up.hostport + "\r\n\r\n", "400"},
		{"not allowed", "GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n", "403"},
		{"prefetch not allowed", "GET /_ct/prefetch?url=http%3A%2F%2F10.1.2.3%2F HTTP/1.1\r\nHost: ct\r\n\r\n", "403"},
		{"prefetch bad url", "GET /_ct/prefetch?url=ftp%3A%2F%2Fx HTTP/1.1\r\nHost: ct\r\n\r\n", "400"},
		{"head too large", "GET http://" + up.hostport + "/ HTTP/1.1\r\nX: " + strings.Repeat("b", wire.MaxHeaderBytes) + "\r\n\r\n", "431"},
		{"connect no port", "CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n", "400"},
	}
	for _, c := range cases {
		if got := rawStream(t, conn, c.raw, 0); !strings.Contains(got, " "+c.want+" ") {
			t.Errorf("%s: got %q, want %s", c.name, got, c.want)
		}
	}
	if got := rawStream(t, conn, "GET http://"+up.hostport+"/bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n", 100*time.Millisecond); !strings.Contains(got, " 408 ") {
		t.Errorf("dribbled head: got %q, want 408", got)
	}
	// No hello at all: the connection is closed as unauthorized.
	for _, c := range []struct{ name, first string }{
		{"no hello", "GET http://" + up.hostport + "/bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"bad token", "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer nope-nope-nope-nope\r\n\r\n"},
		{"no token", "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\n\r\n"},
	} {
		bad := rawConn(t, ts, "")
		got := rawStream(t, bad, c.first, 0)
		if !strings.Contains(got, " 401 ") && !strings.Contains(got, "0x101") {
			t.Errorf("%s: got %q, want 401", c.name, got)
		}
		select {
		case <-bad.Context().Done():
			var ae *quic.ApplicationError
			if err := context.Cause(bad.Context()); !errors.As(err, &ae) || ae.ErrorCode != wire.CodeUnauthorized {
				t.Errorf("%s: closed with %v", c.name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: connection not closed", c.name)
		}
	}
	// Silence after the handshake: closed after HelloTimeout.
	silent := rawConn(t, ts, "")
	select {
	case <-silent.Context().Done():
	case <-time.After(5 * time.Second):
		t.Error("silent connection not closed")
	}
	if resp, _ := good.get(t, up.URL+"/bytes/1000"); resp.StatusCode != 200 {
		t.Fatalf("good client not served: %d", resp.StatusCode)
	}
}

func TestServerLimits(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *server.Config) {
		c.Clients[0].Limits = &server.Limits{MaxStreams: 1}
		c.Clients[1].Limits = &server.Limits{MaxBytes: 300_000}
	}, up.hostport)
	alice := startClient(t, ts, 1, true, nil)
	bob := startClient(t, ts, 1, true, func(c *ClientConfig) { c.Token = testToken + "-bob" })
	// alice: one stream at a time.
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for i := range 2 {
		wg.Go(func() {
			resp, _ := alice.get(t, up.URL+"/slow")
			codes <- resp.StatusCode
		})
		if i == 0 { // the first holds alice's one slot before the second asks
			waitFor(t, func() bool {
				return ts.Usage().Clients[0].Streams == 1
			}, "alice's first stream")
		}
	}
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	// ct-client keeps to the max_streams ct-server announced: the second
	// request waits for the slot at ct-client, and ct-server never refuses.
	if got[200] != 2 {
		t.Fatalf("two concurrent GETs with max_streams 1: %v, want two 200s after a wait", got)
	}
	var sb0 strings.Builder
	ts.WriteMetrics(&sb0)
	if !strings.Contains(sb0.String(), `ct_server_limit_hits_total{limit="streams"} 0`) {
		t.Fatalf("ct-client did not keep to max_streams:\n%s", sb0.String())
	}
	// bob: a byte quota.
	if resp, _ := bob.get(t, up.URL+"/bytes/200000"); resp.StatusCode != 200 {
		t.Fatalf("within quota: %d", resp.StatusCode)
	}
	// Past the quota ct-server resets the stream: the app sees the
	// response cut, or a 502 when the reset overtook the head (a reset
	// stream's buffered data is discarded) — never a whole 200.
	resp, err := bob.hc.Get(up.URL + "/bytes/200000")
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			t.Fatalf("a response past the byte quota arrived whole (%d bytes)", len(body))
		}
		if err == nil && resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("past the quota: status %d, want a cut 200 or a 502", resp.StatusCode)
		}
	}
	if resp, _ := bob.get(t, up.URL+"/bytes/10"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after the quota: %d, want 429", resp.StatusCode)
	}
	// alice is unaffected by bob.
	if resp, _ := alice.get(t, up.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatalf("alice: %d", resp.StatusCode)
	}
	var sb strings.Builder
	ts.WriteMetrics(&sb)
	if !strings.Contains(sb.String(), `ct_server_client_denied_total{client="bob"} 1`) {
		t.Fatalf("metrics:\n%s", sb.String())
	}
}

func TestServerRate(t *testing.T) {
	up := startUpstream(t)
	const rate = 1 << 20
	ts := startServer(t, "", func(c *server.Config) { c.Limits = server.Limits{RateBytesPerSec: rate} }, up.hostport)
	tc := startClient(t, ts, 1, true, nil)
	start := time.Now()
	const size = 3 << 20
	resp, body := tc.get(t, fmt.Sprintf("%s/bytes/%d", up.URL, size))
	d := time.Since(start)
	if resp.StatusCode != 200 || len(body) != size {
		t.Fatalf("%d, %d bytes", resp.StatusCode, len(body))
	}
	// The bucket holds one second: 3 MiB at 1 MiB/s takes >= 2 s.
	if d < 1500*time.Millisecond {
		t.Fatalf("3 MiB at 1 MiB/s took %v", d)
	}
	t.Logf("3 MiB at a 1 MiB/s limit: %v", d)
}
