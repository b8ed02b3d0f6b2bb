package agent

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// startDNS is a tiny DNS responder on UDP loopback: every A question gets
// 192.0.2.7 (TTL 60).
func startDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}})
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// startUDPEcho echoes every datagram.
func startUDPEcho(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// socksAssociate does a SOCKS5 UDP ASSOCIATE and returns the control
// connection and the relay's address.
func socksAssociate(t *testing.T, socks string) (net.Conn, *net.UDPAddr) {
	t.Helper()
	ctrl, err := net.Dial("tcp", socks)
	if err != nil {
		t.Fatal(err)
	}
	ctrl.Write([]byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0})
	ctrl.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := make([]byte, 2+10)
	if _, err := io.ReadFull(ctrl, r); err != nil || r[2] != 5 || r[3] != 0 || r[5] != socksAtypIPv4 {
		t.Fatalf("UDP ASSOCIATE: % x %v", r, err)
	}
	ctrl.SetReadDeadline(time.Time{})
	relay := &net.UDPAddr{IP: net.IP(r[6:10]), Port: int(binary.BigEndian.Uint16(r[10:12]))}
	return ctrl, relay
}

// socksUDPHeader is the SOCKS5 UDP header for an IPv4 target.
func socksUDPHeader(target string) []byte {
	ap := netip.MustParseAddrPort(target)
	ip := ap.Addr().As4()
	h := append([]byte{0, 0, 0, socksAtypIPv4}, ip[:]...)
	return binary.BigEndian.AppendUint16(h, ap.Port())
}

// TestSOCKSUDPDNS: a DNS query (golang.org/x/net/dns/dnsmessage) sent
// through ct-client's SOCKS5 UDP ASSOCIATE gets its answer from a DNS
// responder beside ct-server, carried as QUIC datagrams (CONNECT-UDP);
// an echo of datagrams of several sizes comes back whole; a target
// outside the allow-list gets nothing and the app-side relay goes on.
func TestSOCKSUDPDNS(t *testing.T) {
	dns, echo := startDNS(t), startUDPEcho(t)
	ts := startServer(t, "", nil, dns, echo)
	tc := startClient(t, ts, 2, true, nil)
	socks := startSOCKS(t, tc)
	ctrl, relay := socksAssociate(t, socks)
	defer ctrl.Close()
	app, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	q := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 0x4242, RecursionDesired: true})
	q.StartQuestions()
	q.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("ct.example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	query, _ := q.Finish()
	// Denied first: the allow-list holds for UDP too.
	app.WriteToUDP(append(socksUDPHeader("127.0.0.1:9"), query...), relay)
	app.WriteToUDP(append(socksUDPHeader(dns), query...), relay)
	buf := make([]byte, 65536)
	app.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := app.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("no DNS answer through the agent: %v", err)
	}
	target, _, payload, err := parseSocksUDP(buf[:n])
	if err != nil || target != dns {
		t.Fatalf("answer header: %q %v, want from %s", target, err, dns)
	}
	var p dnsmessage.Parser
	h, err := p.Start(payload)
	if err != nil || h.ID != 0x4242 || !h.Response {
		t.Fatalf("DNS answer: %+v %v", h, err)
	}
	p.SkipAllQuestions()
	a, err := p.AnswerHeader()
	if err != nil || a.Type != dnsmessage.TypeA {
		t.Fatalf("answer: %+v %v", a, err)
	}
	if r, err := p.AResource(); err != nil || r.A != [4]byte{192, 0, 2, 7} {
		t.Fatalf("A record %v %v, want 192.0.2.7", r.A, err)
	}
	for _, size := range []int{1, 100, 1000} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		app.WriteToUDP(append(socksUDPHeader(echo), msg...), relay)
		app.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := app.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("echo of %d bytes: %v", size, err)
		}
		if _, _, got, err := parseSocksUDP(buf[:n]); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: %d back, %v", size, len(got), err)
		}
	}
}

// TestUDPPaths: the RFC 9298 path template round-trips every address
// form, and bad paths are refused.
func TestUDPPaths(t *testing.T) {
	for _, target := range []string{"192.0.2.6:443", "[2001:db8::42]:53", "dns.example:53"} {
		p, err := udpRequestPath(target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseUDPPath(p)
		if err != nil || got != target {
			t.Errorf("%s → %s → %q %v", target, p, got, err)
		}
	}
	for _, bad := range []string{"/x", udpPathPrefix, udpPathPrefix + "h/0/", udpPathPrefix + "h/70000/", udpPathPrefix + "h/53/x/", udpPathPrefix + "%zz/53/"} {
		if got, err := parseUDPPath(bad); err == nil {
			t.Errorf("%q parsed as %q", bad, got)
		}
	}
	b := appendDatagram(nil, 8, []byte("payload"))
	if id, p, err := parseDatagram(b); err != nil || id != 8 || string(p) != "payload" {
		t.Fatalf("datagram round trip: %d %q %v", id, p, err)
	}
	if _, _, err := parseDatagram([]byte{0x02, 0x01, 'x'}); err == nil {
		t.Fatal("context ID 1 accepted")
	}
}
