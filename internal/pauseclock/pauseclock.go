// Package pauseclock tells the time a process did not run from the
// lateness of a ticker's ticks: the one clock edge of pcm's stall
// detector and of the agent's stripe.
//
// A descheduled process (a loaded host, a phone's app put in the
// background) reads neither its sockets nor its timers. The network goes
// on delivering into the sockets' buffers meanwhile, so code that reads
// silence as a dead or slow path must leave that time out: at load 15–19
// (2026-12-01) a test process went unscheduled for up to 430 ms at a
// time, and both pcm's stall detector and the stripe's end game read
// such pauses as stalls. A tick that comes later than its period is the
// measure: the process could not take it sooner.
//
// What each user keeps differs: pcm one silence that a pause stops, the
// stripe the pauses over a window. This package is only what they share:
// the ticker seam (STYLE 3: tests give one whose ticks come late or stop)
// and the lateness rule.
package pauseclock

import "time"

// Ticker is the clock's edge: a time.Ticker (New), or a test's whose
// ticks come late or stop for a while, as those of a descheduled
// process do.
type Ticker interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// New is a Ticker on a time.Ticker of period every.
func New(every time.Duration) Ticker { return timeTicker{time.NewTicker(every)} }

type timeTicker struct{ *time.Ticker }

func (t timeTicker) C() <-chan time.Time { return t.Ticker.C }

// Late is how late a tick at now came when the one before came at last,
// every apart: the time the process did not run between them (0 when it
// came on time or early).
func Late(now, last time.Time, every time.Duration) time.Duration {
	return max(now.Sub(last)-every, 0)
}
