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

	"github.com/hetquic/hetquic/agent/socks5"
)

// startUDPServer answers every datagram on UDP loopback with what
// answer makes of it (nil: no answer).
func startUDPServer(t *testing.T, answer func([]byte) []byte) string {
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
			if out := answer(buf[:n]); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// dnsAnswer is a tiny DNS responder: every question gets the A record
// 192.0.2.7 (TTL 60).
func dnsAnswer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}})
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
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
	if _, err := io.ReadFull(ctrl, r); err != nil || r[2] != 5 || r[3] != 0 || r[5] != socks5.AtypIPv4 {
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
	h := append([]byte{0, 0, 0, socks5.AtypIPv4}, ip[:]...)
	return binary.BigEndian.AppendUint16(h, ap.Port())
}

// udpExchange sends datagram to relay and returns the first answer that
// match accepts, sending again after each second without one, as a DNS
// resolver does: UDP (and a QUIC datagram) may be lost, an answer within
// ten tries may not. Answers to earlier tries are skipped by match.
func udpExchange(app *net.UDPConn, relay *net.UDPAddr, datagram []byte, match func([]byte) bool) ([]byte, error) {
	buf := make([]byte, 65536)
	var err error
	for range 10 {
		app.WriteToUDP(datagram, relay)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			app.SetReadDeadline(deadline)
			var n int
			if n, _, err = app.ReadFromUDP(buf); err != nil {
				break
			}
			if match(buf[:n]) {
				return buf[:n], nil
			}
		}
	}
	return nil, err
}

// TestSOCKSUDPDNS: a DNS query (golang.org/x/net/dns/dnsmessage) sent
// through ct-client's SOCKS5 UDP ASSOCIATE gets its answer from a DNS
// responder beside ct-server, carried as QUIC datagrams (CONNECT-UDP);
// an echo of datagrams of several sizes comes back whole; a target
// outside the allow-list gets nothing and the app-side relay goes on.
func TestSOCKSUDPDNS(t *testing.T) {
	dns := startUDPServer(t, dnsAnswer)
	echo := startUDPServer(t, func(b []byte) []byte { return b })
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
	answer, err := udpExchange(app, relay, append(socksUDPHeader(dns), query...), func([]byte) bool { return true })
	if err != nil {
		t.Fatalf("no DNS answer through the agent: %v", err)
	}
	target, _, payload, err := socks5.ParseUDP(answer)
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
		back, err := udpExchange(app, relay, append(socksUDPHeader(echo), msg...), func(b []byte) bool {
			_, _, got, err := socks5.ParseUDP(b)
			return err == nil && len(got) == size
		})
		if err != nil {
			t.Fatalf("echo of %d bytes: %v", size, err)
		}
		if _, _, got, err := socks5.ParseUDP(back); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: %d back, %v", size, len(got), err)
		}
	}
}
