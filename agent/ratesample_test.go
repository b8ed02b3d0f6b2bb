package agent

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPathRateStreamsJoining: a path's rate estimate (path.rate, which
// the scheduler and the stripe's first plan read) stays near the link's
// rate while streams join one that is already running. The joiners wait
// a round trip for their first byte, longer than one of the first
// stream's samples (rateSampleBytes at the link's rate), so that sample
// ends with four streams counted though the first had the path alone:
// counted as its own bytes times the streams, such a sample read up to
// four times the rate and the estimate (an average) 10.8 MB/s of 5 (the
// 2 : 1 mix's slow path then looked the swiftest, and
// TestStripeReachesSum fell to 0.86 of the summed rate in one run in
// eight). Under synctest, so the joiners' start is exact.
func TestPathRateStreamsJoining(t *testing.T) {
	const (
		rate    = 5e6                   // the link, bytes/s
		delay   = 40 * time.Millisecond // one way: the joiners' first byte comes > 80 ms after their request
		size    = 2 << 20               // each stream's object
		joiners = 3
		settle  = 200 * time.Millisecond // the first stream's samples are at the link's rate by then
		look    = 5 * time.Millisecond   // how often the estimate is read
	)
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, nil, nil)
		m.n.SetLink(memPath(0).Addr, rate, max(64<<10, int(rate*4*delay.Seconds())))
		m.n.SetDelay(memPath(0).Addr, delay)
		p := m.c.paths[0]
		var wg sync.WaitGroup
		get := func() { wg.Go(func() { mustGetIntact(t, m, size) }) }
		get()
		time.Sleep(settle)
		for range joiners {
			get()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var most float64
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-time.After(look):
			}
			p.mu.Lock()
			most = max(most, p.rate)
			p.mu.Unlock()
		}
		t.Logf("the estimate: at most %.2f MB/s, at the end %.2f (the link: %.2f)", most/1e6, p.rate/1e6, rate/1e6)
		if most > pathRateSlack*rate || most <= 0 {
			t.Errorf("the path's rate estimate reached %.2f MB/s, want at most %.2f × the link's %.2f", most/1e6, pathRateSlack, rate/1e6)
		}
	})
}

// pathRateSlack: the estimate may exceed the link's rate by this factor
// (a sample's bytes come in bursts of the link's queue).
const pathRateSlack = 1.2
