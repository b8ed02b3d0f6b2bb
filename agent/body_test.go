package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/idlebody"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/origin"
)

// trickle writes body to w at one chunk per second until stop closes or
// a write fails.
func trickle(w io.Writer, body []byte, chunk int, stop <-chan struct{}) {
	for len(body) > 0 {
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
		k := min(chunk, len(body))
		if _, err := w.Write(body[:k]); err != nil {
			return
		}
		body = body[k:]
	}
}

// A request body at 1 byte/s is cut by ct-client once idlebody.Timeout
// passes without idlebody.ProgressBytes: the app gets 408 (no head went out),
// at idlebody.Timeout exactly in fake time, and ct-server holds nothing for
// it afterwards. Issue 23 saw it go on for 42 s and counting.
func TestBodyIdleCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, nil, nil)
		conn, br := m.rawProxy(t)
		defer conn.Close()
		io.WriteString(conn, "POST http://"+memApp+"/up HTTP/1.1\r\nHost: "+memApp+"\r\nContent-Length: 1000\r\n\r\n")
		start := time.Now()
		stop := make(chan struct{})
		go trickle(conn, make([]byte, 1000), 1, stop)
		resp, err := http.ReadResponse(br, nil)
		took := time.Since(start)
		close(stop)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || took < idlebody.Timeout || took > idlebody.Timeout+time.Second {
			t.Fatalf("status %d after %v, want 408 after %v", resp.StatusCode, took, idlebody.Timeout)
		}
		conn.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		if r := m.s.Usage().Reserved; r != 0 {
			t.Fatalf("ct-server still reserves %d bytes for the cut request", r)
		}
	})
}

// A slow body that keeps moving (150 bytes/s, above idlebody.ProgressBytes per
// idlebody.Timeout) is never cut, however long it takes: no total deadline.
func TestBodySlowButMoving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, nil, nil)
		conn, br := m.rawProxy(t)
		defer conn.Close()
		const size = 9000 // 60 s at 150 bytes/s
		body, _ := io.ReadAll(&origin.Pattern{Size: size})
		fmt.Fprintf(conn, "POST http://%s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", memApp, memApp, size)
		stop := make(chan struct{})
		defer close(stop)
		start := time.Now()
		go trickle(conn, body, 150, stop)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x", size, patternSum(size)); resp.StatusCode != 200 || string(got) != want {
			t.Fatalf("after %v: %d %q, want 200 %q", time.Since(start), resp.StatusCode, got, want)
		}
	})
}

// ct-server cuts an idle body by itself too (a ct-client of another make,
// or one whose app-side cut failed): 408 after idlebody.Timeout.
func TestServerBodyIdleCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, nil, nil)
		conn := memAuthConn(t, m)
		str, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(str, "POST http://"+memApp+"/up HTTP/1.1\r\nHost: "+memApp+"\r\nContent-Length: 1000\r\n\r\n")
		start := time.Now()
		stop := make(chan struct{})
		defer close(stop)
		go trickle(str, make([]byte, 1000), 1, stop)
		resp, err := http.ReadResponse(bufio.NewReader(str), nil)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || took < idlebody.Timeout || took > idlebody.Timeout+time.Second {
			t.Fatalf("status %d %q after %v, want 408 after %v", resp.StatusCode, resp.Header.Get(wire.HdrError), took, idlebody.Timeout)
		}
	})
}

// memAuthConn is a raw QUIC connection to m's ct-server that said hello.
func memAuthConn(t *testing.T, m *memAgent) *quic.Conn {
	t.Helper()
	pc, err := m.n.ListenPacket(netip.AddrPortFrom(netip.MustParseAddr("10.7.0.1"), 0))
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close(); pc.Close() })
	tc := &tls.Config{RootCAs: m.pair.Pool, ServerName: "localhost", NextProtos: []string{wire.ALPN}}
	conn, err := tr.Dial(context.Background(), net.UDPAddrFromAddrPort(memCTServer), tc, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	str, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(str, "GET %s HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer %s\r\n\r\n", wire.PathHello, testToken)
	str.Close()
	resp, err := http.ReadResponse(bufio.NewReader(str), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("hello: %v %v", resp, err)
	}
	resp.Body.Close()
	return conn
}
