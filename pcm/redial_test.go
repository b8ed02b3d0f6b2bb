package pcm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestRedialWhenNoPathValidates: a Client switches from path 0 to path 1,
// and both are cut as the switch takes effect, before the server has the
// connection IDs the client sends down the new path. The probes of path 2
// then go unanswered (the server holds no ID of the client's to answer
// from), so no path validates. The Client dials a new connection (as Dial
// races the paths, the down ones last) instead of closing, and the
// request that stalled and every later one succeed: the first after the
// stall timeout, the failover's probe timeouts and a handshake, the
// others in one round trip. Before, the connection was closed and every
// later request failed.
func TestRedialWhenNoPathValidates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const stall, probe = time.Second, 300 * time.Millisecond
		c := memDial(t, n, 3, Config{Selector: sideSelector{}, StallTimeout: stall, ProbeTimeout: probe, Logf: t.Logf})
		ctx := context.Background()
		if _, err := c.GetOn(ctx, 0, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
		switched := make(chan error, 1)
		go func() {
			_, err := c.GetOn(ctx, 1, "/bytes/10", nil)
			switched <- err
		}()
		for c.Active() != 1 {
			time.Sleep(time.Millisecond)
		}
		n.SetDrop(memPath(1), true)
		n.SetDrop(memPath(0), true)
		if err := <-switched; err != nil {
			t.Fatalf("the request that switched: %v", err)
		}
		rtt := 4 * oneWay // both ends' delays, there and back
		first := stall + stall/stallTicks + failoverRounds*2*probe + 2*rtt
		for i := range 5 {
			start := time.Now()
			res, err := c.GetOn(ctx, 1, "/bytes/5120", nil) // the active path, until it fails
			if err != nil {
				t.Fatalf("request %d after the cut: %v", i, err)
			}
			bound := rtt + rtt/2
			if i == 0 {
				bound = first
			}
			if took := time.Since(start); took > bound || res.Path != 2 || res.TotalBytes != 5120 {
				t.Errorf("request %d after the cut: took %v on path %d, %d bytes; want ≤ %v, on path 2, 5120 bytes",
					i, took, res.Path, res.TotalBytes, bound)
			}
		}
		if err := c.Err(); err != nil {
			t.Errorf("the client ended: %v", err)
		}
		select {
		case <-c.Done():
			t.Error("Done is closed although the client dialled again")
		default:
		}
	})
}
