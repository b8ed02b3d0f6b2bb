package agent

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// connectVia opens a CONNECT tunnel through the proxy with extra head
// lines; it returns the connection and the answer's status.
func connectVia(t *testing.T, proxy, target string, extra string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, extra)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		t.Fatalf("CONNECT: %v", err)
	}
	return conn, br, resp.StatusCode
}

// echoOnce checks that the tunnel echoes a few bytes.
func echoOnce(conn net.Conn, br *bufio.Reader) error {
	msg := []byte("ping through the tunnel\n")
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(br, got); err != nil {
		return err
	}
	if string(got) != string(msg) {
		return fmt.Errorf("echoed %q", got)
	}
	return nil
}

// TestConnectFairness: ct-server allows 4 tunnels. App A holding all 4
// idle does not lock out app B (one of A's idle tunnels is reclaimed);
// A asking for a fifth while its tunnels are busy gets 429 — its share is
// exhausted — while B, below its share, waits and gets the next free slot.
func TestConnectFairness(t *testing.T) {
	echo := startEcho(t)
	ts := startServer(t, "", func(c *server.Config) { c.Limits.MaxTunnels = 4 }, echo)
	tc := startClient(t, ts, 1, true, func(c *ClientConfig) {
		c.AppRule = AppRule{Kind: "header", Header: "X-App"}
		c.TunnelIdle = 300 * time.Millisecond
	})
	if c := tc.gate.Capacity(); c != 4 {
		t.Fatalf("gate capacity %d, want ct-server's announced 4", c)
	}
	tc.gate.ShareWait = 500 * time.Millisecond
	var as []net.Conn
	for range 4 {
		conn, br, code := connectVia(t, tc.proxy, echo, "X-App: a\r\n")
		if code != 200 {
			t.Fatalf("A's CONNECT: %d", code)
		}
		if err := echoOnce(conn, br); err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		as = append(as, conn)
	}
	// A's four are idle: B gets on by reclaiming one.
	bconn, bbr, code := connectVia(t, tc.proxy, echo, "X-App: b\r\n")
	if code != 200 {
		t.Fatalf("B's CONNECT with A's 4 idle tunnels: %d, want 200", code)
	}
	defer bconn.Close()
	if err := echoOnce(bconn, bbr); err != nil {
		t.Fatalf("B's tunnel: %v", err)
	}
	closed := 0
	for _, c := range as {
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d of A's idle tunnels closed (FIN), want 1", closed)
	}
}

// TestConnectShareExhausted, on memnet and fake time: an app holding all
// the device's tunnels, busy, gets 429 for one more once shareWait passed;
// another app waits (it is below its share) and gets the slot A frees.
func TestConnectShareExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, func(c *server.Config) { c.Limits.MaxTunnels = 2 }, func(c *ClientConfig) {
			c.AppRule = AppRule{Kind: "header", Header: "X-App"}
			c.TunnelIdle = time.Hour // nothing is idle
		})
		m.c.gate.ShareWait = 300 * time.Millisecond
		type res struct {
			conn net.Conn
			br   *bufio.Reader
			code int
		}
		connect := func(app string) res {
			conn, br := m.rawProxy(t)
			fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nX-App: %s\r\n\r\n", memApp, memApp, app)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil {
				t.Errorf("app %s's CONNECT: %v", app, err)
				return res{conn, br, 0}
			}
			return res{conn, br, resp.StatusCode}
		}
		var as []res
		for range 2 {
			a := connect("a")
			defer a.conn.Close()
			if a.code != http.StatusOK {
				t.Fatalf("A's CONNECT: %d", a.code)
			}
			as = append(as, a)
		}
		if a := connect("a"); a.code != http.StatusTooManyRequests {
			t.Fatalf("A's third CONNECT at its share: %d, want 429", a.code)
		}
		got := make(chan res, 1)
		go func() { got <- connect("b") }()
		time.Sleep(2 * m.c.gate.ShareWait)
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("B's CONNECT answered %d while A held every slot; want it to wait", r.code)
		default:
		}
		// A's first tunnel ends from the far side (net.Pipe, which the
		// in-memory network is made of, has no half-close to carry an app's
		// FIN to the app-server): its server closes after one answer.
		fmt.Fprintf(as[0].conn, "GET /bytes/10 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", memApp)
		if resp, err := http.ReadResponse(as[0].br, nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("A's last request: %v %v", resp, err)
		}
		r := <-got
		defer r.conn.Close()
		if r.code != http.StatusOK {
			t.Fatalf("B's CONNECT: %d, want 200 once A freed a slot", r.code)
		}
		if err := tunnelGet(r.conn, r.br, 1000); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConnect200HTTPS: 200 HTTPS requests at once from one device, each on
// its own CONNECT tunnel (no keep-alive), all succeed under ct-server's
// default limits: ct-client queues them in its tunnel gate.
func TestConnect200HTTPS(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	ts := startServer(t, "", nil, u.Host)
	tc := startClient(t, ts, 2, true, nil)
	pool := x509.NewCertPool()
	pool.AddCert(origin.Certificate())
	proxyURL, _ := url.Parse("http://" + tc.proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 90 * time.Second}
	want := sha256.Sum256([]byte(body))
	var wg sync.WaitGroup
	var failed atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range 200 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin.URL+"/"+fmt.Sprint(i), nil)
			resp, err := hc.Do(req)
			if err != nil {
				failed.Add(1)
				t.Errorf("request %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 || sha256.Sum256(b) != want {
				failed.Add(1)
				t.Errorf("request %d: status %d, %d bytes, %v", i, resp.StatusCode, len(b), err)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of 200 HTTPS requests through CONNECT failed", failed.Load())
	}
}
