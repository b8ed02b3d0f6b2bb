// Package emu is hetquic's userspace multi-path link emulator: per path and
// per direction it applies delay and jitter, loss (Bernoulli, Gilbert-Elliott
// or a trace), a rate limit (constant or a mahimahi trace) behind a bounded
// drop-tail queue, outages and timed events from a scenario. It is the
// kernel's missing netem, driven by the scenario format of package scenario.
//
// The engine moves packets, not sockets: a front end (emu/udprelay, later the
// lab) reads packets, hands them to Engine.Input, and receives them back on
// its Sink when the link releases them. The boundary types are in this file.
//
// See README.md in this directory for the model, the CLI and the measured
// fidelity.
package emu

import (
	"fmt"
	"net/netip"
	"time"
)

// Dir is the direction of a path.
type Dir int

const (
	Up   Dir = 0 // client → server
	Down Dir = 1 // server → client
)

func (d Dir) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Clock is the engine's source of time. The engine reads Now for every batch
// of packets and sleeps on Waiters; nothing else in the engine reads the time.
type Clock interface {
	// Now returns the current time. It must be monotonic: never earlier than
	// a value it returned before.
	Now() time.Time
	// NewWaiter returns a new, disarmed Waiter.
	NewWaiter() Waiter
}

// Waiter is a re-armable alarm that one goroutine sleeps on.
type Waiter interface {
	// Set arms the alarm for t, replacing any earlier setting; a zero t
	// disarms it. A t in the past fires at once. Safe from any goroutine.
	Set(t time.Time)
	// Wake makes the current or next Wait return at once. Safe from any
	// goroutine.
	Wake()
	// Wait blocks until the alarm fires or Wake is called, and reports
	// true; or until Close, and reports false. It may return early (the
	// caller rechecks); returning late is what costs fidelity.
	Wait() bool
	// Close ends every current and future Wait.
	Close()
}

// Sink receives the packets a link releases.
type Sink interface {
	// Deliver sends pkts, released in this order by link (path, dir), on
	// their way. It is called from the engine's goroutines and from the
	// goroutine that called Engine.Input (when a packet needs no wait), so it
	// must be safe for concurrent use; calls for one link never overlap.
	// The packets belong to the engine again when Deliver returns: it must
	// not keep them or their Data.
	Deliver(path int, dir Dir, pkts []*Packet)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(path int, dir Dir, pkts []*Packet)

// Deliver calls f.
func (f SinkFunc) Deliver(path int, dir Dir, pkts []*Packet) { f(path, dir, pkts) }

// EventLog records what happens to every packet (for plots). It is called
// with the link's lock held, so it must be quick and must not call back into
// the engine.
type EventLog interface {
	// Record is called once per packet event.
	Record(ev PacketEvent)
}

// Event kinds of PacketEvent.
const (
	EventIn   = "in"   // the packet entered the link
	EventOut  = "out"  // the link delivered it
	EventDrop = "drop" // the link dropped it; Cause says why
)

// PacketEvent is one line of the per-packet log.
type PacketEvent struct {
	At         time.Duration // since the engine started
	Path       string
	Dir        Dir
	Kind       string // EventIn, EventOut or EventDrop
	Cause      Cause  // for EventDrop
	Size       int    // bytes
	QueueDelay time.Duration
	Delay      time.Duration // EventOut: total time in the link
}

// Cause is why a packet was dropped.
type Cause int

const (
	CauseNone      Cause = iota
	CauseLoss            // the loss model
	CauseQueue           // drop-tail queue full (or the engine's in-flight bound)
	CauseOutage          // the link was down on arrival or on delivery
	CauseMalformed       // empty or larger than the engine's MaxPacket
	numCauses
)

func (c Cause) String() string {
	switch c {
	case CauseNone:
		return ""
	case CauseLoss:
		return "loss"
	case CauseQueue:
		return "queue"
	case CauseOutage:
		return "outage"
	case CauseMalformed:
		return "malformed"
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// Packet is one datagram in the engine. Get packets from Engine.NewPacket and
// hand them to Engine.Input, which takes ownership; the engine recycles them
// after the Sink's Deliver returns.
type Packet struct {
	// Data is the payload; NewPacket returns it with len 0 and a cap of
	// MaxPacket+1 (a front end reads into Data[:cap] and sets the length, so
	// an oversized datagram shows up as len > MaxPacket).
	Data []byte
	// Addr and Tag are the front end's: where the packet goes, and any
	// per-flow state it needs in Deliver. The engine does not look at them.
	Addr netip.AddrPort
	Tag  any
	// Sent is an optional timestamp the front end may use.
	Sent time.Time

	arrive, depart, release time.Duration
	seq                     uint64
}
