package memnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func TestExchangeDropDelayDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		a, err := n.ListenPacket(netip.MustParseAddrPort("10.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		bc, err := n.ListenIP(net.IPv4(10, 0, 0, 2))
		if err != nil {
			t.Fatal(err)
		}
		b := bc.(*Conn)
		defer b.Close()
		if _, err := n.ListenPacket(b.addr); err == nil {
			t.Fatal("listened twice on one address")
		}
		buf := make([]byte, 100)
		read := func() (string, net.Addr, error) {
			k, from, err := b.ReadFrom(buf)
			return string(buf[:k]), from, err
		}
		// Delivered, with the sender's address.
		a.WriteTo([]byte("hello"), b.LocalAddr())
		if s, from, err := read(); s != "hello" || from.String() != a.LocalAddr().String() || err != nil {
			t.Fatalf("got %q from %v, %v", s, from, err)
		}
		// A read deadline ends a read that gets nothing, at the deadline.
		start := time.Now()
		b.SetReadDeadline(start.Add(time.Second))
		if _, _, err := read(); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("deadline: %v after %v", err, time.Since(start))
		}
		b.SetReadDeadline(time.Time{})
		// Delay: the datagram arrives 30 ms later (synctest's clock).
		n.SetDelay(netip.MustParseAddr("10.0.0.1"), 30*time.Millisecond)
		start = time.Now()
		a.WriteTo([]byte("late"), b.LocalAddr())
		if s, _, _ := read(); s != "late" || time.Since(start) != 30*time.Millisecond {
			t.Fatalf("delayed datagram %q after %v", s, time.Since(start))
		}
		// Drop: a black-holed sender's datagrams vanish.
		n.SetDrop(netip.MustParseAddr("10.0.0.1"), true)
		a.WriteTo([]byte("lost"), b.LocalAddr())
		n.SetDrop(netip.MustParseAddr("10.0.0.1"), false)
		n.SetDelay(netip.MustParseAddr("10.0.0.1"), 0)
		a.WriteTo([]byte("kept"), b.LocalAddr())
		if s, _, _ := read(); s != "kept" {
			t.Fatalf("after a drop got %q", s)
		}
		// Close wakes a blocked reader.
		go func() { time.Sleep(time.Second); b.Close() }()
		if _, _, err := read(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after close: %v", err)
		}
		if _, err := b.WriteTo([]byte("x"), a.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
	})
}

// A link of 1000 bytes/s with a 3000-byte queue: a burst of ten 1000-byte
// datagrams leaves one per second while three fit, the rest are dropped;
// a datagram to another receiver is not held behind them (one line each),
// and the receiving side's link is a bottleneck too.
func TestLinkRateQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		a, _ := n.ListenPacket(netip.MustParseAddrPort("10.0.0.1:1"))
		b, _ := n.ListenPacket(netip.MustParseAddrPort("10.0.0.2:1"))
		c, _ := n.ListenPacket(netip.MustParseAddrPort("10.0.0.3:1"))
		defer a.Close()
		defer b.Close()
		defer c.Close()
		n.SetLink(a.addr.Addr(), 1000, 3000)
		start := time.Now()
		for range 10 {
			a.WriteTo(make([]byte, 1000), b.LocalAddr())
		}
		buf := make([]byte, 2000)
		for i := 1; i <= 3; i++ {
			if _, _, err := b.ReadFrom(buf); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != time.Duration(i)*time.Second {
				t.Fatalf("datagram %d after %v, want %ds", i, d, i)
			}
		}
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, _, err := b.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a fourth datagram (the queue held three): %v", err)
		}
		b.SetReadDeadline(time.Time{})
		// The downlink: c's link slows what it receives.
		n.SetLink(a.addr.Addr(), 0, 0)
		n.SetLink(c.addr.Addr(), 500, 3000)
		start = time.Now()
		a.WriteTo(make([]byte, 1000), c.LocalAddr())
		a.WriteTo([]byte("x"), b.LocalAddr())
		if _, _, err := b.ReadFrom(buf); err != nil || time.Since(start) != 0 {
			t.Fatalf("b's datagram: %v after %v, want at once", err, time.Since(start))
		}
		if _, _, err := c.ReadFrom(buf); err != nil || time.Since(start) != 2*time.Second {
			t.Fatalf("c's datagram: %v after %v, want 2s", err, time.Since(start))
		}
	})
}
