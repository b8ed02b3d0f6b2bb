// Package workpool is hetquic's one worker pool for experiments: every mode
// (offline, trace, real, sim, agent) hands it n independent jobs. It runs
// them on a bounded number of goroutines, prints a progress line, and on
// the first error cancels the jobs still running and returns that error.
//
// Determinism is the caller's half of the contract and the reason for the
// shape of the API: job i must depend only on i (its seed, its variant)
// and write only its own slot of the caller's result (Map does this for
// you). Then the result is bit-identical whatever Options.Workers is; the
// pool only decides when a job runs, never what it computes.
package workpool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/hetquic/hetquic/internal/progress"
)

// Options tune a run.
type Options struct {
	// Workers is how many jobs run at once; ≤ 0 means GOMAXPROCS. Jobs that
	// share something that is not safe for concurrent use (one real
	// network) ask for 1.
	Workers int
	// Progress, when not nil, gets the run's progress (internal/progress):
	// on a terminal one line redrawn every second, "name: k/n runs, T
	// elapsed, about E left"; into a pipe a line for every finished job when
	// Describe is set, else about twenty over the whole run, and a
	// heartbeat line when a long job leaves it silent.
	Progress io.Writer
	Name     string
	// Describe, when set, describes finished job i for its progress line
	// (e.g. its goodput); it runs under the progress lock.
	Describe func(i int) string
	// Now is the progress's clock (time.Now when nil; tests inject one).
	Now func() time.Time
}

// Run calls job(ctx, i) for every i in [0, n) and waits for all of them.
// The first job to fail cancels the context of the others (which should
// return soon after, ctx.Err() is enough) and its error is what Run
// returns; jobs not yet started are skipped. A panicking job is reported as
// an error. When the parent ctx ends first, Run returns its error.
func Run(ctx context.Context, n int, opt Options, job func(ctx context.Context, i int) error) error {
	if n <= 0 {
		return ctx.Err()
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	bar := opt.bar(n)
	if bar != nil {
		defer bar.Finish()
		stop := tick(bar)
		defer stop()
	}

	var (
		mu    sync.Mutex
		first error // the error that cancelled the run
		done  int
		next  int
		wg    sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				err := safe(ctx, i, job)
				mu.Lock()
				switch {
				case err != nil && first == nil && !(ctx.Err() != nil && errors.Is(err, context.Cause(ctx))):
					first = err
					cancel(err)
				case err == nil:
					done++
					if bar != nil {
						bar.Step(done, opt.describe(i))
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// safe runs job(ctx, i), turning a panic into an error.
func safe(ctx context.Context, i int, job func(context.Context, int) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job %d panicked: %v", i, r)
		}
	}()
	return job(ctx, i)
}

// bar is the run's progress bar, nil without Options.Progress.
func (o Options) bar(n int) *progress.Bar {
	if o.Progress == nil {
		return nil
	}
	return progress.New(o.Progress, o.Name, n, progress.Options{TTY: progress.IsTerminal(o.Progress), Now: o.Now})
}

func (o Options) describe(i int) string {
	if o.Describe == nil {
		return ""
	}
	return o.Describe(i)
}

// tick calls bar.Tick every progress.Redraw until stop is called (stop
// waits for the goroutine to end).
func tick(bar *progress.Bar) (stop func()) {
	t := time.NewTicker(progress.Redraw)
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-t.C:
				bar.Tick()
			case <-quit:
				return
			}
		}
	}()
	return func() {
		t.Stop()
		close(quit)
		<-ended
	}
}

// Map runs f for every i in [0, n) as Run does and returns the results in
// index order, so the slice is the same whatever the number of workers.
func Map[T any](ctx context.Context, n int, opt Options, f func(ctx context.Context, i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	err := Run(ctx, n, opt, func(ctx context.Context, i int) error {
		v, err := f(ctx, i)
		if err != nil {
			return err
		}
		out[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
