package pcm

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestQuicGoIdleProbesMeasureNoRTT pins what stops out-of-band probes of
// idle paths (docs/pcm-default.md, "Probes on real QUIC") on
// quic-go v0.65: once the connection has switched, Path.Probe on validated
// idle paths (1, 2, 3, 1, 2, 3, 100 ms apart, every round trip 20 ms) is
// answered late or not at all — measured: 2 of 6 answered, the first after
// 220 ms, the rest at their 300 ms deadline. A prober would feed the
// selector timeouts of live paths (read as "the path may be down") and
// RTTs ten times too long. The cause (QUIC_GO_LOG_LEVEL=debug on this
// test): connection IDs. Each side holds at most 4 of the other's
// (protocol.MaxActiveConnectionIDs); the server retires every other
// path's at each switch and drops a new path's PATH_CHALLENGE while it has
// none to spare ("skipping validation of new path … since no connection
// ID is available"), and the client's NextPathToProbe sends nothing while
// it has none for the path, holding the probe queue behind it. If this
// test fails, every probe came back in about its round trip: quic-go
// answers idle-path probes, and the prober can use the connection's own
// paths.
func TestQuicGoIdleProbesMeasureNoRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const deadline = 300 * time.Millisecond
		c := memDial(t, n, 4, Config{Selector: polling(4), ProbeTimeout: deadline})
		ctx := context.Background()
		for _, i := range []int{1, 2, 3, 0} { // every path validated; 0 active
			if _, err := c.GetOn(ctx, i, "/bytes/100", nil); err != nil {
				t.Fatal(err)
			}
		}
		var answered []int
		prompt := 0
		for _, i := range []int{1, 2, 3, 1, 2, 3} {
			c.mu.Lock()
			qp := c.paths[i].qp
			c.mu.Unlock()
			if qp == nil {
				t.Fatalf("path %d is not validated", i)
			}
			pctx, cancel := context.WithTimeout(ctx, deadline)
			start := time.Now()
			err := qp.Probe(pctx)
			cancel()
			if err == nil {
				answered = append(answered, i)
				if time.Since(start) <= 2*2*oneWay {
					prompt++
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("answered: paths %v, %d within twice their round trip", answered, prompt)
		if prompt == 6 {
			t.Errorf("all six probes of idle paths came back within twice their round trip: quic-go now answers them, see this test's comment")
		}
	})
}

// TestSideProber: a side connection per path measures each path's round
// trip (the path's delay out and the server's back), again and again on
// the same connection; a path whose packets vanish measures +Inf exactly
// at the probe timeout, and comes back when they flow again; probes cost
// bytes, counted. Fake time on emu/memnet; every goroutine ends at Close.
func TestSideProber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		roots := memServe(t, n, origin.Handler(nil), nil)
		cfg := memConfig(t, n, 3, Config{}, roots)
		n.SetDelay(memPath(1), 30*time.Millisecond)
		const timeout = 500 * time.Millisecond
		ctx := context.Background()
		p, err := DialSideProber(ctx, cfg, timeout)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		want := []float64{20, 40, 20}
		for round := range 2 {
			for i, w := range want {
				if got := p.Probe(ctx, i); got < w || got > w+2 {
					t.Errorf("round %d: path %d measured %v ms, want %v", round, i, got, w)
				}
			}
		}
		before := p.Bytes()
		n.SetDrop(memPath(2), true)
		start := time.Now()
		if got := p.Probe(ctx, 2); !math.IsInf(got, 1) {
			t.Errorf("a dead path measured %v ms, want +Inf", got)
		}
		if d := time.Since(start); d != timeout {
			t.Errorf("the dead path's probe took %v, want the timeout %v", d, timeout)
		}
		n.SetDrop(memPath(2), false)
		if got := p.Probe(ctx, 0); got < 20 || got > 22 {
			t.Errorf("after the loss, path 0 measured %v ms", got)
		}
		b := p.Bytes()
		if b <= before {
			t.Errorf("bytes %d after %d: probes cost nothing?", b, before)
		}
		for range 10 {
			p.Probe(ctx, 0)
		}
		t.Logf("bytes: %d after 8 probes (handshakes included), %d per probe after", before, (p.Bytes()-b)/10)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDialSideProberTimeout: a probe timeout that is not > 0 is refused.
func TestDialSideProberTimeout(t *testing.T) {
	if _, err := DialSideProber(context.Background(), Config{}, 0); err == nil {
		t.Fatal("timeout 0 accepted")
	}
}
