package agent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// failbackRun downloads size bytes striped over a fast path 0 and a slow
// path 1 on memnet while events (run in its own goroutine from the
// transfer's start) cut and restore path 0; it checks the response
// intact and returns path 0's byte counter sampled every sampleEvery.
func failbackRun(t *testing.T, size int64, events func(m *memAgent)) []int64 {
	t.Helper()
	var samples []int64
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		for i, rate := range []float64{2e6, 250e3} {
			m.n.SetLink(memPath(i).Addr, rate, 64<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			h := sha256.New()
			got, err := io.Copy(h, resp.Body)
			if err != nil || got != size || [32]byte(h.Sum(nil)) != patternSum(size) {
				t.Errorf("%d of %d bytes (%v), or not intact", got, size, err)
			}
		}()
		evDone := make(chan struct{})
		go func() { defer close(evDone); events(m) }()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				<-evDone
				return
			case <-tick.C:
				samples = append(samples, m.c.paths[0].bytes.Load())
			}
		}
	})
	return samples
}

const sampleEvery = 100 * time.Millisecond

// TestFailbackAfterCut: a 10 s cut of the best path moves the striped
// transfer to the slow one; once the best path is back, the transfer's
// next pieces return to it within FailbackHold + 2 s (fake time).
func TestFailbackAfterCut(t *testing.T) {
	const cutAt, cutFor = time.Second, 10 * time.Second
	samples := failbackRun(t, 40<<20, func(m *memAgent) {
		time.Sleep(cutAt)
		m.n.SetDrop(memPath(0).Addr, true)
		time.Sleep(cutFor)
		m.n.SetDrop(memPath(0).Addr, false)
	})
	back := int((cutAt + cutFor) / sampleEvery)
	if len(samples) <= back {
		t.Fatalf("the transfer ended %v in, before the cut ended", time.Duration(len(samples))*sampleEvery)
	}
	base := samples[back]
	for i := back; i < len(samples); i++ {
		if samples[i] > base+64<<10 { // a piece's bytes (only responses count)
			after := time.Duration(i-back) * sampleEvery
			t.Logf("path 0 carries the transfer again %v after it came back (hold %v)", after, FailbackHold)
			if after > FailbackHold+2*time.Second {
				t.Fatalf("failback took %v after the path came back, want ≤ hold %v + 2 s", after, FailbackHold)
			}
			return
		}
	}
	t.Fatalf("path 0 never carried the transfer again (%v after it came back)", time.Duration(len(samples)-back)*sampleEvery)
}

// TestFlappingPathGetsNoTraffic: the best path, once cut, comes back for
// 3 s and goes again, over and over (inside FailbackHold): the transfer
// stays on the slow path and the flapping one carries none of it.
func TestFlappingPathGetsNoTraffic(t *testing.T) {
	const cutAt, down, up, flaps = time.Second, 3 * time.Second, 3 * time.Second, 4
	samples := failbackRun(t, 16<<20, func(m *memAgent) {
		time.Sleep(cutAt)
		for range flaps {
			m.n.SetDrop(memPath(0).Addr, true)
			time.Sleep(down)
			m.n.SetDrop(memPath(0).Addr, false)
			time.Sleep(up)
		}
	})
	settle := int((cutAt + 2*time.Second) / sampleEvery) // pieces in flight at the first cut
	end := int((cutAt + flaps*(down+up)) / sampleEvery)
	if len(samples) <= end {
		t.Fatalf("the transfer ended %v in, before the flapping ended", time.Duration(len(samples))*sampleEvery)
	}
	if got := samples[end] - samples[settle]; got > 256<<10 {
		t.Fatalf("the flapping path carried %d bytes of the transfer", got)
	}
}
