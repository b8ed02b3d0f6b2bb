package server

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// TestLoginBackoffHolds: free failures are answered at once, then the
// hold doubles from LoginFirstBlock to LoginMaxBlock; a source quiet for
// loginForget starts over; IPv6 sources are /64 prefixes.
func TestLoginBackoffHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b loginBackoff
		a := netip.MustParseAddr("192.0.2.1")
		for i := range LoginFreeFailures {
			if f := b.fail(a, time.Now()); f.until.After(time.Now()) {
				t.Fatalf("failure %d held", i+1)
			}
		}
		for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
			b.fail(a, time.Now())
			if got := b.hold(a, time.Now()); got != want {
				t.Fatalf("hold %v, want %v", got, want)
			}
			time.Sleep(want / 2)
			if got := b.hold(a, time.Now()); got != want/2 {
				t.Fatalf("hold %v after %v, want %v", got, want/2, want/2)
			}
		}
		for range 20 {
			b.fail(a, time.Now())
		}
		if got := b.hold(a, time.Now()); got != LoginMaxBlock {
			t.Fatalf("hold %v, want the cap %v", got, LoginMaxBlock)
		}
		if other := netip.MustParseAddr("192.0.2.2"); b.hold(other, time.Now()) != 0 {
			t.Fatal("another address held")
		}
		time.Sleep(loginForget)
		b.expire(time.Now())
		if b.lru.Len() != 0 || len(b.m) != 0 {
			t.Fatalf("%d entries after loginForget", b.lru.Len())
		}
		if f := b.fail(a, time.Now()); f.n != 1 {
			t.Fatalf("after loginForget: %d failures, want 1", f.n)
		}
		v6a, v6b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
		for range LoginFreeFailures + 1 {
			b.fail(v6a, time.Now())
		}
		if b.hold(v6b, time.Now()) != time.Second || b.hold(netip.MustParseAddr("2001:db8:1:3::1"), time.Now()) != 0 {
			t.Fatal("IPv6 not keyed by /64")
		}
	})
}

// TestLoginBackoffEviction: a full table evicts its least recently failed
// entry (not whatever map iteration yields), never one still blocked;
// while the front is blocked, newcomers go untracked.
func TestLoginBackoffEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b loginBackoff
		addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
		for i := range loginTableSize {
			b.fail(addr(i), time.Now())
			time.Sleep(time.Millisecond)
		}
		b.fail(addr(0), time.Now()) // 0 failed again: now 1 is the least recent
		b.fail(addr(loginTableSize), time.Now())
		if b.m[loginKey(addr(1))] != nil || b.m[loginKey(addr(0))] == nil || b.lru.Len() != loginTableSize {
			t.Fatalf("evicted the wrong entry (len %d)", b.lru.Len())
		}
		// Block the least recent entry (2): it must survive any number of
		// newcomers until its block ends.
		victim := addr(2)
		for range LoginFreeFailures + 5 {
			b.fail(victim, time.Now())
		}
		for i := range loginTableSize {
			b.fail(addr(loginTableSize+1+i), time.Now())
		}
		// The victim moved to the back with its failures; the newcomers
		// pushed everything older out, then the victim is at the front.
		if b.m[loginKey(victim)] == nil {
			t.Fatal("a blocked entry was evicted")
		}
		held := b.hold(victim, time.Now())
		before := b.untracked
		if f := b.fail(addr(1<<20), time.Now()); f != nil || b.untracked != before+1 {
			t.Fatal("a newcomer evicted the blocked front entry")
		}
		time.Sleep(held)
		if f := b.fail(addr(1<<20), time.Now()); f == nil || b.m[loginKey(victim)] != nil {
			t.Fatal("the front entry's block ended but it was not evicted")
		}
	})
}
