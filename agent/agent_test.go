package agent

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestForwardGET(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 2, true, nil)
	for _, n := range []int64{0, 1, 1000, 300_000} {
		resp, body := tc.get(t, fmt.Sprintf("%s/bytes/%d", up.URL, n))
		if resp.StatusCode != 200 {
			t.Fatalf("n=%d: status %d: %s", n, resp.StatusCode, body)
		}
		if sha256.Sum256(body) != patternSum(n) || int64(len(body)) != n {
			t.Fatalf("n=%d: body of %d bytes does not match the pattern", n, len(body))
		}
	}
	// A Range request passes through.
	resp, body := tc.get(t, up.URL+"/bytes/1000", "Range", "bytes=10-19")
	if resp.StatusCode != http.StatusPartialContent || len(body) != 10 || body[0] != byte(10%251) {
		t.Fatalf("range: status %d, %d bytes", resp.StatusCode, len(body))
	}
	// POST with a body.
	hresp, err := tc.hc.Post(up.URL+"/echo", "text/plain", strings.NewReader("hello ct"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if string(b) != "hello ct" {
		t.Fatalf("echo: %q", b)
	}
	// A slow app-server's response arrives, with no migration (that it is
	// no stall at the default stall timeout is TestSlowAppIsNoStallMem's,
	// on fake time).
	resp, body = tc.get(t, up.URL+"/slow")
	if resp.StatusCode != 200 || string(body) != "slow but alive" {
		t.Fatalf("slow: %d %q", resp.StatusCode, body)
	}
	if m := tc.migrations.Load(); m != 0 {
		t.Fatalf("%d migrations on healthy paths", m)
	}
}

func TestAllowList(t *testing.T) {
	up := startUpstream(t)
	other := startUpstream(t) // not allowed
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 1, true, nil)
	for _, u := range []string{
		other.URL + "/bytes/10",
		"http://localhost:" + strings.Split(other.hostport, ":")[1] + "/bytes/10",
		"http://example.com/",
	} {
		resp, body := tc.get(t, u)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d (%s), want 403", u, resp.StatusCode, body)
		}
	}
	if n := other.requests.Load(); n != 0 {
		t.Fatalf("the upstream not on the allow-list got %d requests", n)
	}
	// CONNECT to a non-allowed target.
	conn, err := net.Dial("tcp", tc.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", other.hostport, other.hostport)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to a non-allowed upstream: %d", resp.StatusCode)
	}
	// The allowed one still works.
	if resp, _ := tc.get(t, up.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatalf("allowed upstream: %d", resp.StatusCode)
	}
}

func TestConnectTunnel(t *testing.T) {
	echo := startEcho(t)
	ts := startServer(t, "", nil, echo)
	tc := startClient(t, ts, 2, true, nil)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			conn, err := net.Dial("tcp", tc.proxy)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("CONNECT: %v %v", resp, err)
				return
			}
			payload := make([]byte, 200_000+i)
			for j := range payload {
				payload[j] = byte(j * 7)
			}
			go func() {
				conn.Write(payload)
				conn.(*net.TCPConn).CloseWrite()
			}()
			got, err := io.ReadAll(br)
			if err != nil {
				t.Errorf("tunnel read: %v", err)
				return
			}
			if sha256.Sum256(got) != sha256.Sum256(payload) {
				t.Errorf("tunnel echoed %d bytes, sent %d, or they differ", len(got), len(payload))
			}
		})
	}
	wg.Wait()
}

func TestUnauthorizedClient(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	good := startClient(t, ts, 1, true, nil)
	bad := startClient(t, ts, 1, false, func(c *ClientConfig) { c.Token = "wrong-token-wrong-token" })
	// The refusal is the event to wait for: the client counts it as a
	// failed dial after ct-server counted the unauthorized hello.
	waitFor(t, func() bool { return bad.paths[0].dialFailures.Load() > 0 }, "the wrong token refused")
	if bad.Ready() != 0 {
		t.Fatal("a client with a wrong token got a connection")
	}
	if ts.Usage().Unauthorized == 0 {
		t.Fatal("server did not count the unauthorized client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := bad.WaitReady(ctx, 1); err == nil {
		t.Fatal("bad client ready")
	}
	if resp, _ := good.get(t, up.URL+"/bytes/100"); resp.StatusCode != 200 {
		t.Fatalf("authorized client: %d", resp.StatusCode)
	}
	if up.requests.Load() != 1 {
		t.Fatalf("upstream saw %d requests, want 1", up.requests.Load())
	}
	var sb strings.Builder
	bad.WriteMetrics(&sb)
	if !strings.Contains(sb.String(), `ct_client_path_dial_failures_total{path="p0"}`) {
		t.Fatal("no dial failure metric")
	}
}

func TestServerRestart(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.ReconnectMax = 300 * time.Millisecond })
	if resp, _ := tc.get(t, up.URL+"/bytes/100"); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	addr := ts.addr
	ts.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for tc.Ready() > 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	ts2 := startServer(t, addr, nil, up.hostport)
	_ = ts2
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := tc.WaitReady(ctx2, 2); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	resp, body := tc.get(t, up.URL+"/bytes/5000")
	if resp.StatusCode != 200 || sha256.Sum256(body) != patternSum(5000) {
		t.Fatalf("after restart: %d, %d bytes", resp.StatusCode, len(body))
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	up := startUpstream(t)
	echo := startEcho(t)
	testPair(t)
	done := checkGoroutines(t)
	func() {
		ts := startServer(t, "", nil, up.hostport, echo)
		c, err := NewClient(ClientConfig{Server: ts.addr, ServerName: "localhost", TLS: ts.pool, Token: testToken, Paths: loopbackPaths(2)})
		if err != nil {
			t.Fatal(err)
		}
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		go c.Serve(l)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.WaitReady(ctx, 2); err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{Proxy: http.ProxyURL(mustURL("http://" + l.Addr().String()))}
		hc := &http.Client{Transport: tr}
		for _, n := range []int{100000, 3 << 20} { // the second one striped
			resp, err := hc.Get(fmt.Sprintf("%s/bytes/%d", up.URL, n))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if c.stripes.Load() != 1 {
			t.Fatalf("%d striped responses, want 1", c.stripes.Load())
		}
		// An open tunnel at Close.
		conn, _ := net.Dial("tcp", l.Addr().String())
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", echo)
		br := bufio.NewReader(conn)
		if r, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || r.StatusCode != 200 {
			t.Fatalf("CONNECT: %v", err)
		}
		tr.CloseIdleConnections()
		c.Close()
		ts.stop(t)
		conn.Close()
		up.CloseClientConnections()
	}()
	done()
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
