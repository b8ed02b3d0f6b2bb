package server

import (
	"cmp"
	"errors"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
)

// Limits bound what one ct-client (all of its connections together) may
// use of a ct-server. A zero field takes the default (DefaultLimits, or the
// server's limits for a client's own); a negative one means no limit.
type Limits struct {
	// MaxStreams is the most HTTP requests and prefetch hints in progress
	// at once; one more is refused with 429.
	MaxStreams int `yaml:"max_streams"`
	// MaxTunnels is the most CONNECT tunnels (attached or waiting for a
	// resume) at once; one more is refused with 429.
	MaxTunnels int `yaml:"max_tunnels"`
	// MaxConns is the most authenticated QUIC connections at once; the
	// hello of one more gets 429 and the connection is closed.
	MaxConns int `yaml:"max_conns"`
	// MaxPrefetch is the most prefetch hints being fetched and pushed at
	// once (they count as streams too); one more is refused with 429.
	MaxPrefetch int `yaml:"max_prefetch"`
	// MaxBufferBytes bounds the server memory the client's work holds
	// ("bytes in flight": each request reserves StreamCost, each tunnel
	// TunnelCost); work beyond it is refused with 429.
	MaxBufferBytes int64 `yaml:"max_buffer_bytes"`
	// MaxBytes is the most response and tunnel bytes sent to the client
	// in the server's lifetime; past it, streams are reset and new ones
	// refused. Default: no limit.
	MaxBytes int64 `yaml:"max_bytes"`
	// RateBytesPerSec caps the bytes per second sent to the client (a
	// token bucket holding one second's worth). Default: no limit.
	RateBytesPerSec int64 `yaml:"rate_bytes_per_sec"`
}

// What a request and a tunnel cost ct-server in memory, reserved against
// MaxBufferBytes and the server's MemoryBudget. Measured as RSS growth per
// accepted unread one ("hetquic agent abuse --only streams|tunnels",
// agent/DESIGN.md "Memory"): 0.26 MiB per request (head reader, copy
// buffers, the upstream connection's buffers, quic-go's stream state, the
// Go heap's slack), 0.94 MiB per tunnel whose client reads nothing. A
// tunnel whose client reads part of the data can fill its replay buffer,
// so it may hold wire.ReplayDownBytes on top of a request's cost
// (TunnelCost); more than wire.ReplayBytes of it only while its app reads
// faster than its stream's window per round trip (wire.DownWindow).
// A tunnel reserves only TunnelIdleCost when admitted (a tunnel moving no
// bytes holds what a request holds) and its replay buffer's bytes as the
// buffer grows (session.reserveReplay): so the per-client tunnel limit is
// the memory budget, and the idle SSH, IMAP and push channels of a device
// cost little of it.
const (
	StreamCost     = 256 << 10
	TunnelIdleCost = StreamCost
	TunnelCost     = wire.ReplayDownBytes + TunnelIdleCost
)

// DefaultLimits are the per-client limits of a server configured with
// none. They let one well-behaved device use the server fully (a browser
// opens tens of requests, a device has a few interfaces of at most
// wire.MaxLanes connections each) while a misbehaving one holds at most
// MaxBufferBytes of memory (the abuse test, agent/DESIGN.md).
var DefaultLimits = Limits{
	MaxStreams: 128,
	// A count no browser plus background apps meets (Chromium opens at
	// most 256 sockets per profile); what bounds tunnels is the memory
	// budget (336 idle ones by default, fewer as their replay buffers fill).
	MaxTunnels:     512,
	MaxConns:       wire.DefaultMaxConns,
	MaxPrefetch:    8,
	MaxBufferBytes: 96 << 20,
}

// tunnelShare is the part of MaxBufferBytes (in eighths) a client's
// tunnels may fill, admitted or growing their replay buffers: the rest (12
// MiB, 48 requests, by default) stays for its requests, so an app that
// opens tunnels and never reads them (each filling its replay buffer)
// slows only its own tunnels, never the device's other apps' requests.
const tunnelShare = 7

// bufferFor is the buffer limit work w may fill up to.
func (l Limits) bufferFor(w work) int64 {
	if w == workTunnel {
		return l.MaxBufferBytes / 8 * tunnelShare
	}
	return l.MaxBufferBytes
}

// tunnelSlots is how many tunnels the client may hold at once: MaxTunnels,
// or fewer if MaxBufferBytes cannot reserve TunnelIdleCost for that many;
// 0 when neither bounds them.
func (l Limits) tunnelSlots() int {
	n := l.MaxTunnels
	if l.MaxBufferBytes > 0 {
		byBuf := int(l.bufferFor(workTunnel) / TunnelIdleCost)
		if n <= 0 || byBuf < n {
			n = max(byBuf, 1)
		}
	}
	return max(n, 0)
}

// withDefaults fills l's zero fields from def.
func (l Limits) withDefaults(def Limits) Limits {
	l.MaxStreams = cmp.Or(l.MaxStreams, def.MaxStreams)
	l.MaxTunnels = cmp.Or(l.MaxTunnels, def.MaxTunnels)
	l.MaxConns = cmp.Or(l.MaxConns, def.MaxConns)
	l.MaxPrefetch = cmp.Or(l.MaxPrefetch, def.MaxPrefetch)
	l.MaxBufferBytes = cmp.Or(l.MaxBufferBytes, def.MaxBufferBytes)
	l.MaxBytes = cmp.Or(l.MaxBytes, def.MaxBytes)
	l.RateBytesPerSec = cmp.Or(l.RateBytesPerSec, def.RateBytesPerSec)
	return l
}

var errQuota = errors.New("byte quota exhausted")

// work is what a stream asks of the client's limits.
type work int

const (
	workRequest  work = iota // an HTTP request
	workTunnel               // a CONNECT tunnel
	workPrefetch             // a prefetch hint (also a request)
)

// Limit names, the label of ct_server_limit_hits_total.
const (
	limStreams  = "streams"
	limTunnels  = "tunnels"
	limConns    = "conns"
	limPrefetch = "prefetch"
	limBuffer   = "buffer_bytes"
	limBytes    = "bytes"
	limMemory   = "memory_budget"
)

// clientState is the shared accounting of one authenticated client.
type clientState struct {
	id     string
	limits Limits

	mu       sync.Mutex
	streams  int // requests and prefetch hints in progress
	tunnels  int
	prefetch int
	conns    int
	buffered int64 // memory reserved by the client's work
	sent     int64
	tokens   float64
	last     time.Time

	// counters for metrics
	requests, denied int64
}

func over(n int, limit int) bool { return limit > 0 && n >= limit }

// acquire takes a slot for w and reserves its memory; it returns "" or
// the name of the limit that refused it.
func (c *clientState) acquire(w work, cost int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lim := ""
	switch {
	case c.limits.MaxBytes > 0 && c.sent >= c.limits.MaxBytes:
		lim = limBytes
	case w == workTunnel && over(c.tunnels, c.limits.MaxTunnels):
		lim = limTunnels
	case w != workTunnel && over(c.streams, c.limits.MaxStreams):
		lim = limStreams
	case w == workPrefetch && over(c.prefetch, c.limits.MaxPrefetch):
		lim = limPrefetch
	case c.limits.MaxBufferBytes > 0 && c.buffered+cost > c.limits.bufferFor(w):
		lim = limBuffer
	}
	if lim != "" {
		c.denied++
		return lim
	}
	switch w {
	case workTunnel:
		c.tunnels++
	case workPrefetch:
		c.prefetch++
		c.streams++
	default:
		c.streams++
	}
	c.buffered += cost
	c.requests++
	return ""
}

// reserve takes n bytes of the client's buffer limit, without a slot (a
// tunnel's replay buffer growing); false if the limit refuses them.
func (c *clientState) reserve(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits.MaxBufferBytes > 0 && c.buffered+n > c.limits.bufferFor(workTunnel) {
		return false
	}
	c.buffered += n
	return true
}

func (c *clientState) release(w work, cost int64) {
	c.mu.Lock()
	switch w {
	case workTunnel:
		c.tunnels--
	case workPrefetch:
		c.prefetch--
		c.streams--
	default:
		c.streams--
	}
	c.buffered -= cost
	c.mu.Unlock()
}

// addConn counts a new authenticated connection, unless MaxConns are up.
func (c *clientState) addConn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if over(c.conns, c.limits.MaxConns) {
		c.denied++
		return false
	}
	c.conns++
	return true
}

func (c *clientState) dropConn() {
	c.mu.Lock()
	c.conns--
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
