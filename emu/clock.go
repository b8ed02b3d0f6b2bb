package emu

import (
	"sync"
	"time"
)

// SystemClock is the wall clock with precise waits. Go's own timers fire up
// to ~1 ms late on Linux (the runtime's poller sleeps in whole ms), which
// would cost the emulator its delay fidelity; on Linux SystemClock's waiters
// are timerfds (hrtimer precision, µs) read through the runtime's poller, so
// a waiting goroutine holds no thread or P. Elsewhere they fall back to Go
// timers.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewWaiter implements Clock.
func (SystemClock) NewWaiter() Waiter {
	if w, err := newTimerfdWaiter(); err == nil {
		return w
	}
	return newGoWaiter()
}

// GoClock is the wall clock with plain Go timers: less precise than
// SystemClock, but it runs on fake time inside a testing/synctest bubble.
type GoClock struct{}

// Now returns time.Now().
func (GoClock) Now() time.Time { return time.Now() }

// NewWaiter implements Clock.
func (GoClock) NewWaiter() Waiter { return newGoWaiter() }

// goWaiter is a Waiter on a Go timer.
type goWaiter struct {
	mu     sync.Mutex
	timer  *time.Timer
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newGoWaiter() *goWaiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &goWaiter{timer: t, wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (w *goWaiter) Set(t time.Time) {
	w.mu.Lock()
	if t.IsZero() {
		w.timer.Stop()
	} else {
		w.timer.Reset(time.Until(t))
	}
	w.mu.Unlock()
}

func (w *goWaiter) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *goWaiter) Wait() bool {
	select {
	case <-w.timer.C:
		return true
	case <-w.wake:
		return true
	case <-w.closed:
		return false
	}
}

func (w *goWaiter) Close() {
	w.once.Do(func() {
		close(w.closed)
		w.timer.Stop()
	})
}
