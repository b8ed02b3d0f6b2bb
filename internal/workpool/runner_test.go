package workpool

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// work is a deterministic job whose cost varies with i, so workers finish
// out of order.
func work(i int) uint64 {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	var x uint64
	for range 1000 + r.IntN(20000) {
		x ^= r.Uint64()
	}
	return x
}

func TestMapInvariantToWorkers(t *testing.T) {
	var want []uint64
	for _, w := range []int{1, 2, 3, 8, 64, 0} {
		got, err := Map(context.Background(), 200, Options{Workers: w}, func(_ context.Context, i int) (uint64, error) {
			return work(i), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("workers %d: result %d differs", w, i)
			}
		}
	}
}

func TestFirstErrorCancelsSiblings(t *testing.T) {
	boom := errors.New("boom")
	var started, cancelled atomic.Int32
	err := Run(context.Background(), 100, Options{Workers: 4}, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 2 {
			return boom
		}
		select { // a long job that only ends when cancelled
		case <-ctx.Done():
			cancelled.Add(1)
			return ctx.Err()
		case <-time.After(time.Minute):
			return nil
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	if s := started.Load(); s > 8 {
		t.Errorf("%d jobs started after the failure; jobs not yet started must be skipped", s)
	}
	if c := cancelled.Load(); c == 0 || c != started.Load()-1 {
		t.Errorf("%d of %d running siblings saw the cancellation", c, started.Load()-1)
	}
}

func TestParentCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	err := Run(ctx, 10, Options{Workers: 2}, func(context.Context, int) error { ran.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Fatalf("Run on a cancelled ctx = %v after %d jobs", err, ran.Load())
	}
}

func TestPanicIsAnError(t *testing.T) {
	_, err := Map(context.Background(), 3, Options{Workers: 1}, func(_ context.Context, i int) (int, error) {
		if i == 1 {
			panic("bad")
		}
		return i, nil
	})
	if err == nil || !strings.Contains(err.Error(), "job 1 panicked: bad") {
		t.Fatalf("err = %v", err)
	}
}

// fakeClock advances a second each time it is read.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	clock := &fakeClock{}
	if err := Run(context.Background(), 40, Options{Workers: 3, Progress: &b, Name: "x", Now: clock.Now}, func(context.Context, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 20 || !strings.HasPrefix(lines[19], "x: 40/40 runs, ") || !strings.Contains(lines[0], "x: 2/40 runs, ") || !strings.Contains(lines[0], " left") {
		t.Fatalf("progress: %q", lines)
	}
	b.Reset()
	clock = &fakeClock{}
	Run(context.Background(), 2, Options{Workers: 1, Progress: &b, Describe: func(i int) string { return "job" }, Now: clock.Now}, func(context.Context, int) error { return nil })
	if want := "1/2 runs (job), 1.0 s elapsed, about 1.0 s left\n2/2 runs (job), 2.0 s elapsed\n"; b.String() != want {
		t.Fatalf("described progress: %q, want %q", b.String(), want)
	}
	if err := Run(context.Background(), 0, Options{}, nil); err != nil {
		t.Fatalf("no jobs: %v", err)
	}
}
