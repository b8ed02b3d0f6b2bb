// Package cc holds the congestion controllers of the simulator's MPQUIC
// model. A controller owns one path's congestion window; coupled controllers
// (LIA, OLIA, BALIA, MACO) see the connection's other subflows through a
// Group shared by all controllers of one connection (Config.Group).
package cc

import (
	"fmt"
	"maps"
	"slices"
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
	// Group couples the subflows of one connection (LIA, OLIA, BALIA,
	// MACO); every controller of the connection gets the same Group. nil:
	// a group of one (the controller is then uncoupled). NewReno, Cubic and
	// BBR ignore it.
	Group *Group
	// Access is the cross-layer database's view of the path (thesis §3.6.1,
	// Fig. 3.7): the access-link capacity in bit/s predicted at now (Eq.
	// 3.2–3.3; 0: unknown) and the round-trip propagation delay (Eq. 3.11;
	// 0: unknown). Only MACO reads it; nil: unknown.
	Access func(now time.Duration) (capacityBps float64, propRTT time.Duration)
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
	return slices.Sorted(maps.Keys(registry))
}

var registry = map[string]func(Config) Controller{
	"newreno":     func(c Config) Controller { return NewNewReno(c) },
	"newreno-ns3": func(c Config) Controller { return NewNewRenoNS3(c) },
	"quicgo":      func(c Config) Controller { return NewQuicGo(c) },
	"cubic":       func(c Config) Controller { return NewCubic(c) },
	"lia":         func(c Config) Controller { return NewCoupled(LIA, c) },
	"olia":        func(c Config) Controller { return NewCoupled(OLIA, c) },
	"balia":       func(c Config) Controller { return NewCoupled(BALIA, c) },
	"bbr":         func(c Config) Controller { return NewBBR(c) },
	"maco":        func(c Config) Controller { return NewMACO(c) },
}

// Pacer is implemented by controllers that pace their path. The connection
// then sends on the path no faster than PacingRate bytes per second (a token
// bucket of at least ten packets, as quic-go's; see sim/pacer.go), waking
// itself when the bucket refills rather than waiting for an ACK; the window
// still bounds bytes in flight. The rate must be positive. Controllers
// without it are ACK-clocked: they send whenever the window has room.
type Pacer interface {
	PacingRate(now time.Duration) float64
}

// AckEventer is implemented by controllers that grow the window once per
// ACK frame rather than per byte acknowledged (ns-3's TcpNewReno): the
// connection calls OnAckEvent once after the OnAck calls of a frame that
// newly acknowledged something.
type AckEventer interface {
	OnAckEvent(now time.Duration)
}

// WindowOvershoot is implemented by controllers whose sender, like quic-go's
// (cubicSender.CanSend: bytes in flight < window), sends a packet whenever
// any of the window is unused, so the last packet may pass the window by up
// to one packet less a byte. Without it a packet is sent only if it fits
// (bytes in flight + size ≤ window). At small windows the difference is a
// packet per round trip: ~6 % of the rate at 1 % loss, where quic-go's
// window is ~17 packets.
type WindowOvershoot interface {
	OvershootsWindow() bool
}

// Signals counts a controller's congestion signals (thesis §3.6.3: "the
// number of congestion losses detected"): LossEvents is loss episodes (at
// most one per recovery period, i.e. per round trip), Reductions those that
// cut the window. NewReno, Cubic, LIA, OLIA and BALIA cut on every episode;
// MACO only on those Algorithm 5 classifies as congestion; BBR v1 never
// (its model ignores loss).
type Signals struct{ LossEvents, Reductions int }

// SignalCounter is implemented by the controllers that count Signals.
type SignalCounter interface{ Signals() Signals }
