package pcm

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/pathsel"
)

// TestRedialWhenNoPathValidates: a Client switches from path 0 to path 1,
// and both are cut as the switch takes effect, before the server has the
// connection IDs the client sends down the new path. The probes of path 2
// then go unanswered (the server holds no ID of the client's to answer
// from), so no path validates. The Client dials a new connection (as Dial
// races the paths, the down ones last) instead of closing, and the
// request that stalled succeeds after the stall timeout, the failover's
// probe budget and a handshake, and every later one in one round trip. Before, the connection was closed and every
// later request failed.
func TestRedialWhenNoPathValidates(t *testing.T) {
	for _, api := range []string{"GetOn", "RoundTrip"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { redialCase(t, api) })
		})
	}
}

// redialCase is TestRedialWhenNoPathValidates with the requests after the
// cut sent through api: GetOn (resumes) or RoundTrip (Transport's way:
// replays).
func redialCase(t *testing.T, api string) {
	n := memnet.New()
	const stall, probe = time.Second, 300 * time.Millisecond
	c := memDial(t, n, 3, Config{Selector: onePath(1), StallTimeout: stall, ProbeTimeout: probe, Logf: t.Logf})
	ctx := context.Background()
	if _, err := c.GetOn(ctx, 0, "/bytes/10", nil); err != nil {
		t.Fatal(err)
	}
	switched := make(chan error, 1)
	go func() {
		_, err := redialGet(ctx, c, api) // to path 1, which is cut as it lands there
		switched <- err
	}()
	for c.Active() != 1 {
		time.Sleep(time.Millisecond)
	}
	n.SetDrop(memPath(1), true)
	n.SetDrop(memPath(0), true)
	cut := time.Now()
	rtt := 4 * oneWay // both ends' delays, there and back
	if err := <-switched; err != nil {
		t.Fatalf("the request that switched: %v", err)
	}
	// The stall (found up to two detector ticks late), the failover's probe
	// budget (failoverBudget: one probe timeout), the dial race (its first
	// try goes to path 0, cut too, so path 2 starts a stagger later), a
	// handshake and the request again: 1.65 s. With two rounds of probes
	// per path, as before the budget, 2.55 s.
	if took, bound := time.Since(cut), stall+2*stall/stallTicks+probe+dialStagger+3*rtt; took > bound {
		t.Errorf("the request that stalled took %v after the cut, want ≤ %v", took, bound)
	}
	for i := range 5 {
		start := time.Now()
		res, err := redialGet(ctx, c, api)
		if err != nil {
			t.Fatalf("request %d after the cut: %v", i, err)
		}
		if took, bound := time.Since(start), rtt+rtt/2; took > bound || res.Path != 2 || res.TotalBytes != 5120 {
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
}

// redialGet fetches 5120 bytes through api, asking for path 1 (the
// selector's choice for RoundTrip): the active one until it fails.
func redialGet(ctx context.Context, c *Client, api string) (Result, error) {
	if api == "GetOn" {
		return c.GetOn(ctx, 1, "/bytes/5120", nil)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+memServer.String()+"/bytes/5120", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		return Result{}, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res, _ := ResultOf(resp)
	return res, err
}

// onePath is a selector that always chooses path p.
type onePath int

func (p onePath) Choose() (pathsel.PathID, error)     { return pathsel.PathID(p), nil }
func (onePath) Observe(pathsel.PathID, float64) error { return nil }
func (onePath) AddPath(pathsel.PathID) error          { return nil }
func (onePath) RemovePath(pathsel.PathID) error       { return nil }
