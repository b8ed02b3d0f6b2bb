package pcm

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestAsyncProberNeverBlocks: a probe is asked and answered later, never
// waited for — asking takes no time, the answer comes through Answers once
// the probe has ended, and only once; a probe whose side connections
// cannot be dialled measures +Inf (information, not an error) and the dial
// is tried again at the next probe; asking again while a probe is under
// way asks nothing more; close ends the goroutine, with a probe under way
// (synctest fails the test on one left behind). Fake time.
func TestAsyncProberNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		s := NewAsyncProber(2, func(ctx context.Context) (*SideProber, error) {
			dials.Add(1)
			select { // a dial that takes 50 ms and fails
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil, errors.New("no route")
		})
		start := time.Now()
		s.Ask(1)
		s.Ask(1)
		if a := s.Answers(); len(a) != 0 {
			t.Fatalf("answers %v before the probe ended", a)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("asking took %v of fake time: a probe delayed the caller", d)
		}
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if n := dials.Load(); n != 1 {
			t.Fatalf("%d dials for one probe asked twice, want 1", n)
		}
		a := s.Answers()
		if len(a) != 1 || a[0].Path != 1 || !math.IsInf(a[0].RTTms, 1) {
			t.Fatalf("answers %v after path 1's failed probe, want one, +Inf", a)
		}
		if a := s.Answers(); len(a) != 0 {
			t.Fatalf("answers %v handed out twice", a)
		}
		s.Ask(1)
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if n := dials.Load(); n != 2 {
			t.Fatalf("%d dials: a failed dial is not tried again at the next probe", n)
		}
		if s.Bytes() != 0 {
			t.Fatalf("bytes %d without a side connection", s.Bytes())
		}
		s.Ask(0) // under way at close
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
