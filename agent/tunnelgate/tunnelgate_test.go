package tunnelgate

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGate: on fake time, a freed slot goes to the waiting app that holds
// the fewest; an idle tunnel of the app holding the most is reclaimed for
// a waiter; an app at its share of busy tunnels gets ErrShareExhausted
// after ShareWait, one below it keeps waiting.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(4, time.Second, nil)
		g.ShareWait, g.MaxWait = 2*time.Second, time.Minute
		ctx := t.Context()
		var a []*Ticket
		for range 3 {
			tk, err := g.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			g.Attach(tk, func() {})
			a = append(a, tk)
		}
		b1, _ := g.Acquire(ctx, "b")
		g.Attach(b1, func() {})
		// Full. a (3 held) and b (1 held) wait; a's tunnels stay busy.
		stopBusy := make(chan struct{})
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopBusy:
					return
				case now := <-tick.C:
					for _, tk := range a {
						tk.Touch(now)
					}
					b1.Touch(now)
				}
			}
		}()
		type res struct {
			app string
			err error
		}
		got := make(chan res, 2)
		go func() { _, err := g.Acquire(ctx, "a"); got <- res{"a", err} }()
		synctest.Wait()
		go func() { _, err := g.Acquire(ctx, "b"); got <- res{"b", err} }()
		// a holds 3 ≥ its share (4/2): after ShareWait it is refused;
		// b (1 < 2) still waits.
		r := <-got
		if r.app != "a" || !errors.Is(r.err, ErrShareExhausted) {
			t.Fatalf("first answer %s %v, want a refused with ErrShareExhausted", r.app, r.err)
		}
		select {
		case r := <-got:
			t.Fatalf("b answered %v while below its share and nothing freed", r.err)
		default:
		}
		// A slot frees: b gets it.
		g.Release(a[0])
		if r := <-got; r.app != "b" || r.err != nil {
			t.Fatalf("after a release: %s %v, want b granted", r.app, r.err)
		}
		// Now a: 2, b: 2. a's tunnels go idle: c's request reclaims one of
		// them (a and b hold the same; only a has idle ones).
		close(stopBusy)
		synctest.Wait()
		var reclaimed atomic.Int32
		for _, tk := range a[1:] {
			g.Attach(tk, func() { reclaimed.Add(1); g.Release(tk) })
			tk.Touch(time.Now())
		}
		time.Sleep(1500 * time.Millisecond) // a's tunnels idle beyond 1 s
		b1.Touch(time.Now())
		if _, err := g.Acquire(ctx, "c"); err != nil {
			t.Fatalf("c: %v", err)
		}
		if reclaimed.Load() != 1 || g.Reclaimed() != 1 {
			t.Fatalf("%d tunnels reclaimed for one waiter (counted %d), want 1", reclaimed.Load(), g.Reclaimed())
		}
	})
}

// TestReclaimRace: a slot granted long before its tunnel is attached (the
// client waited out ct-server's refusals) is not idle when attached: a
// waiter queued meanwhile does not reclaim it, so the app never gets a
// 200 and then EOF. Before the idle clock started at Attach, the grant
// started it, and the tunnel was reclaimed the moment it was handed over.
func TestReclaimRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, time.Second, nil)
		ctx := t.Context()
		tk, err := g.Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(13 * time.Second) // opening the tunnel met 429s
		waited := make(chan error, 1)
		go func() {
			_, err := g.Acquire(ctx, "b")
			waited <- err
		}()
		synctest.Wait()
		var closed atomic.Bool
		g.Attach(tk, func() { closed.Store(true); g.Release(tk) })
		time.Sleep(500 * time.Millisecond) // the app's first bytes are on their way
		synctest.Wait()
		if closed.Load() {
			t.Fatal("a tunnel was reclaimed within its idle time of being attached")
		}
		// It does become reclaimable once idle that long after attaching.
		if err := <-waited; err != nil || !closed.Load() {
			t.Fatalf("waiter: %v, reclaimed %v; want the idle tunnel reclaimed for it", err, closed.Load())
		}
	})
}

// TestNoReclaimWhileSlotsFree: 64 idle tunnels and 256 new ones within
// capacity: none of the idle ones is closed.
func TestNoReclaimWhileSlotsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(320, time.Second, nil)
		ctx := t.Context()
		var closed atomic.Int32
		for range 64 {
			tk, err := g.Acquire(ctx, "idle-app")
			if err != nil {
				t.Fatal(err)
			}
			g.Attach(tk, func() { closed.Add(1); g.Release(tk) })
		}
		time.Sleep(time.Minute)
		for i := range 256 {
			if _, err := g.Acquire(ctx, "browser"); err != nil {
				t.Fatalf("new tunnel %d: %v", i, err)
			}
		}
		synctest.Wait()
		if closed.Load() != 0 {
			t.Fatalf("%d idle tunnels closed while slots were free", closed.Load())
		}
	})
}

// TestReclaimOldestIdle: when every slot is taken, the tunnel idle longest
// goes first.
func TestReclaimOldestIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(3, time.Second, nil)
		ctx := t.Context()
		var order []int
		tks := make([]*Ticket, 3)
		for i := range tks {
			tk, err := g.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			tks[i] = tk
			g.Attach(tk, func() { order = append(order, i); g.Release(tk) })
		}
		time.Sleep(5 * time.Second)
		now := time.Now()
		tks[0].Touch(now.Add(-time.Second))
		tks[1].Touch(now.Add(-4 * time.Second)) // idle longest
		tks[2].Touch(now.Add(-2 * time.Second))
		if _, err := g.Acquire(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if len(order) != 1 || order[0] != 1 {
			t.Fatalf("reclaimed %v, want [1] (the one idle longest)", order)
		}
	})
}

// TestLongQueueMoves: one app, 1 slot, ten requests queued behind a
// tunnel that ends every 8 s (below ShareWait): every request is granted,
// the last after 80 s of waiting — far past MaxWait — because the queue
// kept moving. Before, MaxWait counted from each waiter's arrival, and on a
// loaded machine the tail of 200 HTTPS requests over 32 slots got 503s.
func TestLongQueueMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, time.Hour, nil)
		g.ShareWait, g.MaxWait = 10*time.Second, 60*time.Second
		ctx := t.Context()
		first, err := g.Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Ticket, 10)
		errs := make(chan error, 10)
		for range 10 {
			go func() {
				tk, err := g.Acquire(ctx, "a")
				if err != nil {
					errs <- err
					return
				}
				got <- tk
			}()
		}
		synctest.Wait()
		held := first
		for i := range 10 {
			time.Sleep(8 * time.Second) // the tunnel's request ends
			g.Release(held)
			select {
			case held = <-got:
			case err := <-errs:
				t.Fatalf("request %d of a moving queue refused: %v", i, err)
			}
		}
	})
}

// TestNoReclaimAwaitingAnswer: a tunnel whose app spoke last (a request or
// a TLS handshake waiting on a slow server) is not idle, however long the
// server takes; once the answer arrives and the tunnel then stays quiet, it
// may be reclaimed.
func TestNoReclaimAwaitingAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, time.Second, nil)
		g.ShareWait, g.MaxWait = time.Hour, time.Hour
		ctx := t.Context()
		tk, err := g.Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		var closed atomic.Bool
		g.Attach(tk, func() { closed.Store(true); g.Release(tk) })
		tk.Sent(time.Now()) // the app's request goes up
		waited := make(chan error, 1)
		go func() {
			_, err := g.Acquire(ctx, "b")
			waited <- err
		}()
		time.Sleep(30 * time.Second) // the server is slow
		synctest.Wait()
		if closed.Load() {
			t.Fatal("a tunnel waiting on its server's answer was reclaimed")
		}
		tk.Touch(time.Now()) // the answer arrives; then quiet
		if err := <-waited; err != nil || !closed.Load() {
			t.Fatalf("waiter: %v, reclaimed %v; want the tunnel reclaimed once idle after its answer", err, closed.Load())
		}
	})
}
