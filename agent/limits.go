package agent

import (
	"errors"
	"sync"
	"time"
)

// Limits bound what one ct-client (all of its connections together) may
// use of a ct-server. A zero field means no limit.
type Limits struct {
	// MaxStreams is the most requests or tunnels in progress at once; one
	// more is refused with 429.
	MaxStreams int `yaml:"max_streams"`
	// MaxBytes is the most response and tunnel bytes sent to the client in
	// the server's lifetime; past it, streams are reset and new ones refused.
	MaxBytes int64 `yaml:"max_bytes"`
	// RateBytesPerSec caps the bytes per second sent to the client
	// (a token bucket holding one second's worth).
	RateBytesPerSec int64 `yaml:"rate_bytes_per_sec"`
}

var errQuota = errors.New("byte quota exhausted")

// clientState is the shared accounting of one authenticated client.
type clientState struct {
	id     string
	limits Limits

	mu      sync.Mutex
	streams int
	sent    int64
	tokens  float64
	last    time.Time

	// counters for metrics
	requests, denied int64
}

func (c *clientState) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits.MaxStreams > 0 && c.streams >= c.limits.MaxStreams {
		c.denied++
		return false
	}
	if c.limits.MaxBytes > 0 && c.sent >= c.limits.MaxBytes {
		c.denied++
		return false
	}
	c.streams++
	c.requests++
	return true
}

func (c *clientState) release() {
	c.mu.Lock()
	c.streams--
	c.mu.Unlock()
}

// take accounts n bytes about to be sent and returns how long to wait
// first to keep to the rate, or errQuota.
func (c *clientState) take(n int, now time.Time) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits.MaxBytes > 0 && c.sent+int64(n) > c.limits.MaxBytes {
		c.sent = c.limits.MaxBytes // exhausted: later requests are refused
		return 0, errQuota
	}
	c.sent += int64(n)
	r := float64(c.limits.RateBytesPerSec)
	if r <= 0 {
		return 0, nil
	}
	if c.last.IsZero() {
		c.tokens, c.last = r, now
	}
	c.tokens = min(r, c.tokens+r*now.Sub(c.last).Seconds())
	c.last = now
	c.tokens -= float64(n)
	if c.tokens >= 0 {
		return 0, nil
	}
	return time.Duration(-c.tokens / r * float64(time.Second)), nil
}

// limitedWriter writes to w under the client's limits, in chunks small
// enough for the token bucket to pace smoothly.
type limitedWriter struct {
	w    interface{ Write([]byte) (int, error) }
	c    *clientState
	done <-chan struct{}
}

const paceChunk = 16 << 10

func (l *limitedWriter) Write(p []byte) (int, error) {
	var total int
	for len(p) > 0 {
		chunk := p[:min(len(p), paceChunk)]
		wait, err := l.c.take(len(chunk), time.Now())
		if err != nil {
			return total, err
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
				return total, errShutdown
			}
		}
		k, err := l.w.Write(chunk)
		total += k
		if err != nil {
			return total, err
		}
		p = p[len(chunk):]
	}
	return total, nil
}

var errShutdown = errors.New("agent: shutting down")
