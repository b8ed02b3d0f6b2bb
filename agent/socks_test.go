package agent

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/socks5"
)

// startSOCKS serves SOCKS5 for tc on a loopback port and returns it.
func startSOCKS(t *testing.T, tc *testClient) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); tc.ServeSOCKS(l) }()
	t.Cleanup(func() { tc.Close(); <-done })
	return l.Addr().String()
}

// TestSOCKSCurl: real curl through ct-client's SOCKS5, with the name
// resolved by the proxy (--socks5-hostname: a domain-name request) and by
// curl (--socks5: an IPv4 request); a target outside ct-server's
// allow-list is refused with "not allowed" and never reached.
func TestSOCKSCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (the CI image has it): ", err)
	}
	up := startUpstream(t)
	_, port, _ := net.SplitHostPort(up.hostport)
	ts := startServer(t, "", func(c *server.Config) { c.AllowInternal = []string{"127.0.0.1"} }, up.hostport, "localhost:"+port) // localhost resolves to loopback (egress rules)
	tc := startClient(t, ts, 2, true, nil)
	socks := startSOCKS(t, tc)
	want := patternSum(3_000_000)
	for _, c := range []struct{ flag, host string }{{"--socks5-hostname", "localhost:" + port}, {"--socks5", up.hostport}} {
		out, err := exec.Command("curl", "-sS", "--max-time", "30", c.flag, socks, "http://"+c.host+"/bytes/3000000").Output()
		if err != nil {
			t.Fatalf("curl %s: %v", c.flag, err)
		}
		if len(out) != 3_000_000 || sha256.Sum256(out) != want {
			t.Fatalf("curl %s: %d bytes, or they differ from origin's", c.flag, len(out))
		}
	}
	before := up.requests.Load()
	out, err := exec.Command("curl", "-sS", "--max-time", "10", "--socks5-hostname", socks, "http://example.invalid:81/").CombinedOutput()
	// curl prints the reply code: 2, "connection not allowed by ruleset".
	if err == nil || !strings.Contains(string(out), "(2)") {
		t.Fatalf("curl to a target outside the allow-list: %v %q, want reply 2 (not allowed)", err, out)
	}
	if up.requests.Load() != before {
		t.Fatal("the app-server was reached for a refused target")
	}
}

// TestSOCKSTunnelMoves: a SOCKS5 CONNECT is a resumable tunnel: its echo
// survives the death of the path carrying it.
func TestSOCKSTunnelMoves(t *testing.T) {
	echo := startEcho(t)
	ts := startServer(t, "", nil, echo)
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) { c.StallTimeout = DefaultStallTimeout }) // the dropped path must stall
	socks := startSOCKS(t, tc)
	conn, err := net.Dial("tcp", socks)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host, port, _ := net.SplitHostPort(echo)
	req := []byte{5, 1, 0, 5, 1, 0, 1}
	req = append(req, net.ParseIP(host).To4()...)
	var p int
	fmt.Sscan(port, &p)
	req = append(req, byte(p>>8), byte(p))
	conn.Write(req)
	reply := make([]byte, 2+10)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(conn, reply); err != nil || !bytes.Equal(reply[:3], []byte{5, 0, 5}) || reply[3] != 0 {
		t.Fatalf("SOCKS5 handshake: % x %v", reply, err)
	}
	payload := bytes.Repeat([]byte("socks tunnel "), 100_000)
	go conn.Write(payload[:len(payload)/2])
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(conn, got[:len(payload)/2]); err != nil {
		t.Fatal(err)
	}
	// Kill the path the tunnel is on: the rest must come through another.
	for _, pth := range tc.paths {
		if pth.tunnels.Load() > 0 {
			ts.pc.setDrop(pth.Addr, true)
			defer ts.pc.setDrop(pth.Addr, false)
		}
	}
	go func() { conn.Write(payload[len(payload)/2:]); conn.(*net.TCPConn).CloseWrite() }()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(conn, got[len(payload)/2:]); err != nil {
		t.Fatalf("after the path died: %v", err)
	}
	if !bytes.Equal(got, payload) || tc.migrations.Load() == 0 {
		t.Fatalf("echo intact %v, migrations %d", bytes.Equal(got, payload), tc.migrations.Load())
	}
}

// TestSOCKSBadInput: a wrong version, no acceptable method, BIND and an
// unknown address type each get their RFC 1928 answer.
func TestSOCKSBadInput(t *testing.T) {
	ts := startServer(t, "", nil)
	tc := startClient(t, ts, 1, true, nil)
	socks := startSOCKS(t, tc)
	for _, c := range []struct {
		name string
		send []byte
		want []byte
	}{
		{"SOCKS4", []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, nil},
		{"no acceptable method", []byte{5, 1, 2}, []byte{5, 0xff}},
		{"BIND", []byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, append([]byte{5, 0}, socks5.Reply(socks5.CmdUnsupported)...)},
		{"address type 9", []byte{5, 1, 0, 5, 1, 0, 9}, append([]byte{5, 0}, socks5.Reply(socks5.AtypUnsupported)...)},
	} {
		conn, err := net.Dial("tcp", socks)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(c.send)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: got % x (%v), want % x and the connection closed", c.name, got, err, c.want)
		}
	}
}
