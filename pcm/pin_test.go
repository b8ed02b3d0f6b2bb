package pcm

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestPinOnlyFromEvidence: the client concludes that the server does not
// follow switches only from notFollowedLimit unfollowed responses in a row
// on healthy paths that raced no failover; the verdict is visible, ends
// when the path it pins goes down, after pinHold (re-tested), or when the
// caller clears it.
func TestPinOnlyFromEvidence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{})
		unfollowed := func(failovers int) Result {
			return Result{Path: 0, PathName: "p0", Carrier: 1, Failovers: failovers, Est: time.Now()}
		}
		followed := Result{Path: 0, PathName: "p0", Carrier: 0, Est: time.Now(), End: time.Now().Add(time.Millisecond)}
		// Responses that raced a switch under load are no evidence.
		c.mu.Lock()
		c.lastBusySwitch = time.Now()
		c.mu.Unlock()
		for range 2 * notFollowedLimit {
			r := unfollowed(0)
			c.credit(&r)
		}
		if s := c.Stats(); s.Pinned != -1 {
			t.Fatalf("pinned to %d by responses that raced a switch under load", s.Pinned)
		}
		time.Sleep(time.Second)
		// Responses that raced a failover are no evidence.
		for range 2 * notFollowedLimit {
			r := unfollowed(1)
			c.credit(&r)
		}
		if s := c.Stats(); s.Pinned != -1 {
			t.Fatalf("pinned to %d by responses that raced a failover", s.Pinned)
		}
		// Unfollowed responses broken by a followed one are not repeated.
		for range 2 * notFollowedLimit {
			for range notFollowedLimit - 1 {
				r := unfollowed(0)
				c.credit(&r)
			}
			r := followed
			c.credit(&r)
		}
		if s := c.Stats(); s.Pinned != -1 {
			t.Fatalf("pinned to %d by unfollowed responses that were not in a row", s.Pinned)
		}
		// A response on a path that is down is no evidence either.
		c.mu.Lock()
		c.paths[1].down = true
		c.mu.Unlock()
		for range notFollowedLimit {
			r := unfollowed(0)
			c.credit(&r)
		}
		if s := c.Stats(); s.Pinned != -1 {
			t.Fatalf("pinned to %d, a path that is down", s.Pinned)
		}
		c.mu.Lock()
		c.paths[1].down = false
		c.mu.Unlock()
		pinAll := func() {
			for range notFollowedLimit {
				r := unfollowed(0)
				c.credit(&r)
			}
		}
		pinAll()
		if s := c.Stats(); s.Pinned != 1 {
			t.Fatalf("after %d unfollowed responses in a row: pinned %d, want 1", notFollowedLimit, s.Pinned)
		}
		c.ClearPin()
		if s := c.Stats(); s.Pinned != -1 {
			t.Errorf("ClearPin left the pin on %d", s.Pinned)
		}
		pinAll()
		c.mu.Lock()
		c.markDownLocked(1)
		c.mu.Unlock()
		if s := c.Stats(); s.Pinned != -1 {
			t.Errorf("the pinned path went down and the pin stayed on %d", s.Pinned)
		}
		c.mu.Lock()
		c.paths[1].down = false
		c.mu.Unlock()
		pinAll()
		time.Sleep(pinHold)
		if s := c.Stats(); s.Pinned != -1 {
			t.Errorf("the pin outlived pinHold (%v): still on %d", pinHold, s.Pinned)
		}
	})
}
