package sim

import (
	"math"
	"time"
)

// Pacing constants, as quic-go v0.65.0 paces (internal/congestion/pacer.go):
// a burst may be as large as what the rate sends in the shortest wake-up
// interval plus one timer granularity, but at least ten packets, and a
// sender that must wait sleeps at least minPacingDelay, sending what the
// rate earned meanwhile in one go.
const (
	paceBurstPackets = 10
	minPacingDelay   = time.Millisecond
	paceBurstTime    = minPacingDelay + kGranularity
)

// pacer is one path's token bucket. A congestion controller that
// implements cc.Pacer gives the rate; the connection sends a packet only
// when the bucket holds a whole packet, and otherwise wakes itself at
// releaseAt instead of waiting for the next ACK. The bucket starts full (the
// first burst goes at once) and is never fuller than maxBurst, so a path
// idle for a while does not get to dump a window at line rate.
type pacer struct {
	packet   int           // bytes of one packet (quic-go: max datagram size)
	budget   int           // bytes left in the bucket just after the last send
	lastSent time.Duration // when that was
	used     bool          // a packet was sent (else the bucket is full)
}

// bytesPerSecond is rate in whole bytes per second, at least 1. The
// pacer counts in integers, as quic-go does, so that a wake-up at
// releaseAt always finds the packet it waited for.
func bytesPerSecond(rate float64) int64 {
	if rate >= math.MaxInt32 {
		return math.MaxInt32
	}
	return max(int64(rate), 1)
}

// bytesIn is what rate (bytes/s) earns in d, rounded down.
func bytesIn(d time.Duration, rate float64) int {
	if d <= 0 {
		return 0
	}
	bw := bytesPerSecond(rate)
	if int64(d) > math.MaxInt64/bw {
		return math.MaxInt32
	}
	return int(min(bw*int64(d)/int64(time.Second), math.MaxInt32))
}

// maxBurst is the bucket's size at rate.
func (p *pacer) maxBurst(rate float64) int {
	return max(bytesIn(paceBurstTime, rate), paceBurstPackets*p.packet)
}

// budgetAt is what the bucket holds at now.
func (p *pacer) budgetAt(now time.Duration, rate float64) int {
	if !p.used {
		return p.maxBurst(rate)
	}
	return min(p.maxBurst(rate), p.budget+bytesIn(now-p.lastSent, rate))
}

// held reports whether the pacer holds the next packet back at now.
func (p *pacer) held(now time.Duration, rate float64) bool {
	return p.budgetAt(now, rate) < p.packet
}

// onSent takes size bytes out of the bucket (a packet larger than what is
// left empties it: it was allowed because a whole packet was there, or it
// is a probe, which no pacer holds back).
func (p *pacer) onSent(now time.Duration, size int, rate float64) {
	p.budget = max(p.budgetAt(now, rate)-size, 0)
	p.lastSent, p.used = now, true
}

// releaseAt is when the bucket will hold a whole packet again at rate: the
// time to earn the missing bytes, rounded up to the nanosecond so the
// wake-up never finds the bucket a byte short, and at least minPacingDelay
// after the last send. Only meaningful while held.
func (p *pacer) releaseAt(rate float64) time.Duration {
	missing := int64(p.packet - p.budget)
	bw := bytesPerSecond(rate)
	d := time.Duration((missing*int64(time.Second) + bw - 1) / bw)
	return p.lastSent + max(minPacingDelay, d)
}
