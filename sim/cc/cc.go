// Package cc holds the congestion controllers of the simulator's MPQUIC
// model. A controller owns one path's congestion window; coupled controllers
// (another issue) get the other paths through their constructor.
package cc

import (
	"fmt"
	"sort"
	"time"
)

// Controller is one path's congestion controller. All sizes are bytes; now
// is virtual time. The connection calls the methods in event order and never
// concurrently.
type Controller interface {
	// Name is the registry name ("newreno", "cubic").
	Name() string
	// Window is the congestion window in bytes: the connection sends on the
	// path only while bytes in flight + packet size ≤ Window.
	Window() int
	// OnPacketSent records that bytes were sent at now (bytesInFlight
	// includes them).
	OnPacketSent(now time.Duration, bytes, bytesInFlight int)
	// OnAck records that a packet sent at sentAt with bytes was acknowledged.
	OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT)
	// OnLoss records that a packet sent at sentAt was declared lost
	// (RFC 9002 §7.3.2: one window reduction per round trip).
	OnLoss(now time.Duration, bytes int, sentAt time.Duration)
	// OnRTTSample gives each new RTT sample (RFC 9002 §5).
	OnRTTSample(now time.Duration, rtt RTT)
	// OnPersistentCongestion collapses the window (RFC 9002 §7.6) after a
	// PTO or a path outage.
	OnPersistentCongestion(now time.Duration)
	// InSlowStart reports whether the controller is in slow start.
	InSlowStart() bool
	// Ssthresh is the slow start threshold in bytes (MaxInt when unset).
	Ssthresh() int
}

// RTT is a path's RTT estimate as RFC 9002 §5 keeps it.
type RTT struct {
	Latest, Smoothed, Var, Min time.Duration
}

// Config parameterises a controller.
type Config struct {
	MSS           int // maximum datagram size in bytes
	InitialWindow int // bytes; 0: RFC 9002's min(10·MSS, max(14720, 2·MSS))
}

func (c Config) initialWindow() int {
	if c.InitialWindow > 0 {
		return c.InitialWindow
	}
	return min(10*c.MSS, max(14720, 2*c.MSS))
}

func (c Config) minWindow() int { return 2 * c.MSS }

// New returns the named controller.
func New(name string, cfg Config) (Controller, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown congestion control %q (want one of %v)", name, Names())
	}
	return f(cfg), nil
}

// Names lists the registered controllers.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

var registry = map[string]func(Config) Controller{
	"newreno": func(c Config) Controller { return NewNewReno(c) },
	"cubic":   func(c Config) Controller { return NewCubic(c) },
}
