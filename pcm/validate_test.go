package pcm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestIdlePathDiesQuietly: a path that dies while idle rests as soon as
// its side probe goes unanswered, so a request the selector would send
// after it goes where the connection is at once instead of waiting out a
// validation; it comes back when a probe of it answers again. With every
// path resting the selector has none, and requests still go, on the
// connection's path. Fake time.
func TestIdlePathDiesQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{})
		ctx := context.Background()
		for _, p := range []int{1, 2, 0} {
			if _, err := c.GetOn(ctx, p, "/bytes/10", nil); err != nil {
				t.Fatal(err)
			}
		}
		n.SetDrop(memPath(1), true)
		// Two probes a second, over two idle paths, each lost after 1 s.
		time.Sleep(3 * time.Second)
		if !c.Resting()[1] {
			t.Fatal("path 1 not resting 3 s after it died idle")
		}
		start := time.Now()
		res, err := c.GetOn(ctx, 1, "/bytes/10", nil)
		if err != nil || res.Path != 0 {
			t.Fatalf("request for the resting path: on %d, %v; want on 0", res.Path, err)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("request for the resting path took %v: it waited for a validation", took)
		}
		// Every path gone from the selector: the request still goes.
		c.mu.Lock()
		c.markDownLocked(0)
		c.markDownLocked(2)
		c.mu.Unlock()
		if _, err := c.Get(ctx, "/bytes/10", nil); err != nil {
			t.Errorf("Get with every path resting: %v", err)
		}
		n.SetDrop(memPath(1), false)
		time.Sleep(2 * time.Minute) // the longest rest, and a probe round
		if c.Resting()[1] {
			t.Error("path 1 still resting after it recovered and probes ran")
		}
	})
}
