package realenv

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/pcm"
)

// TestSideProbesNeverBlock: a probe is asked and answered later, never
// waited for — the first ask of a path returns nothing, its answer comes
// once at a later ask; a probe whose side connections cannot be dialled
// measures +Inf (information, not an error) and the dial is tried again;
// asking again while a probe is under way asks nothing more; close ends
// the goroutine (synctest fails the test on one left behind). Fake time.
func TestSideProbesNeverBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		s := newSideProbes(2, func(ctx context.Context) (*pcm.SideProber, error) {
			dials.Add(1)
			select { // a dial that takes 50 ms and fails
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil, errors.New("no route")
		})
		start := time.Now()
		if _, ok := s.Probe(0, 1); ok {
			t.Fatal("the first ask of path 1 returned an answer")
		}
		if _, ok := s.Probe(1, 1); ok {
			t.Fatal("an answer before the probe ended")
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("asking took %v of fake time: a probe delayed the caller", d)
		}
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if n := dials.Load(); n != 1 {
			t.Fatalf("%d dials for one probe asked twice, want 1", n)
		}
		v, ok := s.Probe(2, 1) // and asks again
		if !ok || !math.IsInf(v, 1) {
			t.Fatalf("path 1 after its failed probe: %v, %v; want +Inf, true", v, ok)
		}
		if _, ok := s.Probe(3, 1); ok {
			t.Fatal("an answer handed out twice")
		}
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if n := dials.Load(); n != 2 {
			t.Fatalf("%d dials: a failed dial is not tried again at the next probe", n)
		}
		if s.Bytes() != 0 {
			t.Fatalf("bytes %d without a side connection", s.Bytes())
		}
		s.Probe(4, 0) // under way at close
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
	})
}
