package pktqueue

import (
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func TestQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(1)
		from := &net.UDPAddr{Port: 7}
		q.TryPush(Datagram{B: []byte("a"), From: from})
		q.TryPush(Datagram{B: []byte("dropped: full")})
		b := make([]byte, 10)
		if n, f, err := q.ReadFrom(b); string(b[:n]) != "a" || f != from || err != nil {
			t.Fatalf("read %q from %v, %v", b[:n], f, err)
		}
		// A deadline set while a read waits ends it at the new deadline.
		start := time.Now()
		go func() { time.Sleep(time.Second); q.SetReadDeadline(time.Now().Add(time.Second)) }()
		if _, _, err := q.ReadFrom(b); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Fatalf("deadline: %v after %v", err, time.Since(start))
		}
		q.SetReadDeadline(time.Time{})
		q.Push(Datagram{Err: errors.New("socket error")})
		if _, _, err := q.ReadFrom(b); err == nil || err.Error() != "socket error" {
			t.Fatalf("queued error: %v", err)
		}
		go func() { time.Sleep(time.Second); q.Close() }()
		if _, _, err := q.ReadFrom(b); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("after close: %v", err)
		}
		if q.Push(Datagram{}) || q.Close() {
			t.Fatal("push or close after close succeeded")
		}
	})
}
