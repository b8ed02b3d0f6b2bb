package wire_test

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/internal/memquic"
	"github.com/hetquic/hetquic/emu/memnet"
)

// A far fast path: 120 Mbit/s at a 200 ms round trip, with a router's
// queue of one bandwidth-delay product on the client's access link (its
// downlink: the server's data fills it).
const (
	farRate   = 120e6 / 8 // bytes/s
	farOneWay = 100 * time.Millisecond
	farQueue  = int(farRate * 2 * farOneWay / time.Second)
)

const (
	// downloads are the streams the client downloads on at once, as
	// ct-client fetches pieces: one stream's window (wire.StreamWindow,
	// 1 MiB a round trip) carries a fifth of this path's rate.
	downloads = 8
	// downloadBytes is what each download stream carries: more than the
	// test's 4 s take.
	downloadBytes = 16 << 20
	// steadyAfter is when the requests start: slow start over 200 ms round
	// trips reaches the path's rate after about 2 s.
	steadyAfter = 3 * time.Second
	// requests are the small requests written mid-download, requestGap
	// apart; with the downloads they stay under memquic's 16 streams.
	requests   = 6
	requestGap = 100 * time.Millisecond
)

// requestBound is how long a small request written mid-download may take
// to reach the server: the one-way delay plus a few ms for the uplink's
// serialization (a few ACKs ahead of it) and the receiver's scheduling.
const requestBound = farOneWay + 5*time.Millisecond

// TestRequestMidDownloadOnFarFastPath: a connection with the agent's QUIC
// configuration that downloads over a far fast path sends a small request
// on a new stream at once, however many ACKs its download makes it send.
//
// Why: such a receiver sends an ACK-only packet for about every second
// packet it gets (some 6000 a second here), and its congestion window stays
// at the initial 32 packets while its smoothed round trip grows with the
// downlink's queue. Stock quic-go v0.65.0 charges every packet it sends to
// its pacer, ACK-only ones included, so those ACKs eat the pacing budget
// (1.25 × cwnd / srtt): here one of the six requests waited 0.44–0.58 s
// on its way out, as ct-client's piece requests and window updates waited
// 150–250 ms in the qlog of a striped download. RFC 9002 §7: packets that
// contain only ACK frames are not congestion controlled;
// third_party/quic-go (its PATCHES.md) charges the pacer only for
// ack-eliciting packets. A larger receive window does not pass: with the
// client's raised to 32 MiB a stream, stock quic-go held the first request
// 7.5 s, for what waits is the request, held by the pacer, not by flow
// control.
func TestRequestMidDownloadOnFarFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		server := netip.MustParseAddrPort("10.9.0.1:443")
		client := netip.MustParseAddr("10.8.0.1")
		n.SetLink(client, farRate, farQueue)
		n.SetDelay(client, farOneWay)
		n.SetDelay(server.Addr(), farOneWay)

		s := memquic.Listen(t, n, server)
		arrived := make(chan time.Time, 16)
		go s.Serve(nil, func(_ *quic.Conn, str *quic.Stream) {
			var b [1]byte
			if _, err := io.ReadFull(str, b[:]); err != nil {
				return
			}
			if b[0] == 'r' { // a small request: note when it arrived
				arrived <- time.Now()
				return
			}
			buf := make([]byte, 64<<10)
			for sent := 0; sent < downloadBytes; sent += len(buf) {
				if _, err := str.Write(buf); err != nil {
					return
				}
			}
			str.Close()
		})
		conn, err := s.Dial(context.Background(), memquic.Transport(t, n, netip.AddrPortFrom(client, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseWithError(0, "")
		for range downloads {
			down, err := conn.OpenStreamSync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			down.Write([]byte{'d'})
			go io.Copy(io.Discard, down)
		}

		start := time.Now()
		time.Sleep(steadyAfter)
		var worst time.Duration
		for range requests {
			str, err := conn.OpenStreamSync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			str.Write([]byte{'r'})
			var took time.Duration
			select {
			case at := <-arrived:
				took = at.Sub(sent)
			case <-time.After(10 * time.Second):
				t.Fatal("a request never arrived")
			}
			t.Logf("a request at %v took %v", sent.Sub(start), took)
			worst = max(worst, took)
			str.Close()
			time.Sleep(requestGap)
		}
		if worst > requestBound {
			t.Errorf("a small request took up to %v to reach the server, want ≤ %v", worst, requestBound)
		}
	})
}
