package pcm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/pathsel"
)

// SideProber measures the round trip of idle paths out of band without
// the main connection's paths. quic-go v0.65 answers Path.Probe on a
// validated idle path late or not at all (TestQuicGoIdleProbesMeasureNoRTT:
// connection IDs run out at every switch), so each probed path gets a
// light connection of its own instead: a one-path Client on the path's
// local address, on which a probe is a HEAD of the target (Probes.Target,
// default /bytes/0), timed from its stream to the response's head — one
// round trip, independent of the server's path state (headRTT says why
// any status counts). Its cost: a handshake per side connection, the
// request's and response's headers and the ACKs per probe (Bytes counts
// both), and a connection's state on the server per probed path.
//
// A side connection is dialled on its path's first probe, and again on
// the probe after one that failed on it (retire); with a working
// set, at most that many are open at once besides those whose probe is
// under way (the start-up sweep probes every path at once: AsyncProber),
// and probing another path closes the least recently probed idle one (a
// handshake more the next time it is probed).
type SideProber struct {
	cfg     Config
	timeout time.Duration
	target  string
	strict  bool // target was configured: only a 2xx answers it (ErrProbeTarget)
	ws      int  // most side connections open at once; 0: every path

	mu     sync.Mutex
	sides  []*Client   // by path; nil: not open
	used   []time.Time // when each side was last probed
	busy   []int       // by path: probes under way on its side
	closed uint64      // the bytes of side connections closed since
}

// sideTarget is what a probe asks for by default: hetquic's origin answers
// it with an empty 200 (origin.Handler: /bytes/N), any other origin most
// often with its cheapest answer, a 404 (headRTT: that measures the path
// as well).
const sideTarget = "/bytes/0"

// ErrProbeTarget is a probe's error when the server answered a configured
// probe target with a status other than 2xx: the user named a resource the
// origin serves, so the answer says the target is wrong for this server.
var ErrProbeTarget = errors.New("pcm: the probe target does not answer 2xx")

// NewSideProber returns a prober for the paths of cfg (cfg.Paths, each on
// its own connection; the selector and strategy are not used), dialling
// nothing yet. timeout bounds one probe (a probe that takes longer
// measures +Inf), target is the request target of a probe (empty: the
// default, which any answer answers; set: only a 2xx), ws the most side
// connections open at once (0: all).
func NewSideProber(cfg Config, timeout time.Duration, target string, ws int) (*SideProber, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("pcm: side prober: timeout %v must be > 0", timeout)
	}
	strict := target != ""
	if !strict {
		target = sideTarget
	}
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	return &SideProber{cfg: cfg, timeout: timeout, target: target, strict: strict, ws: ws,
		sides: make([]*Client, len(cfg.Paths)), used: make([]time.Time, len(cfg.Paths)), busy: make([]int, len(cfg.Paths))}, nil
}

// DialSideProber is NewSideProber with the default target and every side
// connection dialled at once.
func DialSideProber(ctx context.Context, cfg Config, timeout time.Duration) (*SideProber, error) {
	p, err := NewSideProber(cfg, timeout, "", 0)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Paths {
		if _, err := p.side(ctx, i); err != nil {
			return nil, errors.Join(err, p.Close())
		}
		p.release(i)
	}
	return p, nil
}

// side returns path i's side connection, dialling it (and closing the
// least recently probed idle one beyond the working set) when it is not
// open, and holds it open until release(i).
func (p *SideProber) side(ctx context.Context, i int) (*Client, error) {
	p.mu.Lock()
	if c := p.sides[i]; c != nil && c.Err() == nil {
		p.used[i] = time.Now()
		p.busy[i]++
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	one := p.cfg
	one.Paths = []LocalPath{p.cfg.Paths[i]}
	one.Selector = sideSelector{}
	one.ProbeTimeout = p.timeout
	// No stall detector: a probe is given up at the probe timeout
	// (ProbeErr), and then its connection is closed (retire). A detector
	// could only fail over to the one path that stalled: with its stall
	// timeout at the probe timeout, it found a stall at the instant a
	// probe of a cut path timed out, whenever its tick ran before the
	// probe's deadline did, and redialled that same path, a handshake into
	// the black hole that ran on until the client closed: the cut path
	// "stalled" a second time about 3 s after its failover, as its rest
	// ended and its side probe went out (TestLoadCutQuicGo's log,
	// TestNoSecondStallAfterFailover, TestDeadPathSideProbeLeavesNothing).
	one.side = true
	c, err := Dial(ctx, one)
	if err != nil {
		return nil, fmt.Errorf("pcm: side connection on %s: %w", p.cfg.Paths[i].Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.sides[i]; old != nil {
		p.retireLocked(i)
	}
	p.sides[i], p.used[i] = c, time.Now()
	p.busy[i]++
	p.evictLocked()
	return c, nil
}

// release ends the hold side took on path i's side connection, and closes
// what the working set no longer holds.
func (p *SideProber) release(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy[i]--
	p.evictLocked()
}

// evictLocked closes the least recently probed side connections whose
// probe is not under way until the working set holds.
func (p *SideProber) evictLocked() {
	for p.ws > 0 {
		open, lru := 0, -1
		for j, c := range p.sides {
			if c == nil {
				continue
			}
			open++
			if p.busy[j] == 0 && (lru < 0 || p.used[j].Before(p.used[lru])) {
				lru = j
			}
		}
		if open <= p.ws || lru < 0 {
			return
		}
		p.retireLocked(lru)
	}
}

// retire closes path i's side connection c after a probe on it failed
// (timed out, most often: the path may be down), unless another has
// replaced it: the next probe of the path dials afresh, within its own
// timeout, rather than queue behind the retransmissions of the one lost
// on a connection that quic-go would keep until its idle timeout.
func (p *SideProber) retire(i int, c *Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sides[i] == c {
		p.retireLocked(i)
	}
}

func (p *SideProber) retireLocked(i int) {
	c := p.sides[i]
	s := c.s().conn.ConnectionStats()
	p.closed += s.BytesSent + s.BytesReceived
	c.Close()
	p.sides[i] = nil
}

// Probe measures path i's round trip in ms: +Inf when the probe failed or
// took longer than the prober's timeout (the path may be down; that is
// information for the selector, not an error). It blocks for at most the
// timeout (and a side connection's handshake on the path's first probe);
// callers that must not wait use an AsyncProber.
func (p *SideProber) Probe(ctx context.Context, i int) float64 {
	v, _ := p.ProbeErr(ctx, i)
	return v
}

// ProbeErr is Probe that also says why a probe measured +Inf; an error
// wrapping ErrProbeTarget means the server answered a configured target,
// without success.
func (p *SideProber) ProbeErr(ctx context.Context, i int) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	c, err := p.side(ctx, i)
	if err != nil {
		return math.Inf(1), err
	}
	defer p.release(i)
	rtt, status, err := c.headRTT(ctx, p.target)
	if err != nil {
		p.retire(i, c)
		return math.Inf(1), err
	}
	if p.strict && (status < 200 || status > 299) {
		return math.Inf(1), fmt.Errorf("%w: %s answered %d", ErrProbeTarget, p.target, status)
	}
	return float64(rtt) / float64(time.Millisecond), nil
}

// maxProbeBody bounds the body a probe reads after the response's head:
// a HEAD response has none (RFC 9110 §9.3.2), and a server that sends one
// anyway is not read on; the rest is refused (STOP_SENDING).
const maxProbeBody = 1 << 10

// headRTT sends a HEAD of target on c's connection and returns the time
// from its stream to the response's head, and its status. Any
// complete response head is one round trip on the path plus the server's
// time to answer, which is all a probe measures: a 404 (the default
// target against an origin other than hetquic's, which serves it) or a
// 405 measures the path as well as a 200 does, so probing works against
// any origin with no target configured (a configured one must answer
// 2xx: SideProber.ProbeErr). It times the head, not the last
// byte, and asks with HEAD: an error page may be large or slow to send,
// and neither is the path's round trip; a HEAD's answer has no body, so
// a probe costs its request's and response's heads whatever the target.
// What a non-2xx leaves in the sample is the server's time to make its
// head; a target whose answer is slow to make (an error page a framework
// renders) reads as a slower path, and Probes.Target names a cheaper one.
func (c *Client) headRTT(ctx context.Context, target string) (time.Duration, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "https://"+c.authority()+target, nil)
	if err != nil {
		return 0, 0, err
	}
	str, err := c.s().h3.OpenRequestStream(ctx)
	if err != nil {
		return 0, 0, err
	}
	start := c.cfg.Now()
	stop := context.AfterFunc(ctx, func() {
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	})
	defer stop()
	if err := str.SendRequestHeader(req); err != nil {
		return 0, 0, err
	}
	str.Close() // no body: send FIN
	resp, err := str.ReadResponse()
	if err != nil {
		return 0, 0, err
	}
	rtt := c.cfg.Now().Sub(start)
	// Read to the FIN, which most often came with the head: a stream read
	// to its end needs no STOP_SENDING.
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	resp.Body.Close()
	return rtt, resp.StatusCode, nil
}

// Bytes is what the side connections have sent and received so far
// (QUIC packets, without UDP and IP headers; quic-go's ConnectionStats),
// handshakes and closed connections included.
func (p *SideProber) Bytes() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.closed
	for _, c := range p.sides {
		if c != nil {
			s := c.s().conn.ConnectionStats()
			n += s.BytesSent + s.BytesReceived
		}
	}
	return n
}

// Close closes every side connection and its socket.
func (p *SideProber) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for i, c := range p.sides {
		if c != nil {
			err = errors.Join(err, c.Close())
			p.sides[i] = nil
		}
	}
	return err
}

// sideSelector stands in for a side connection's selector: it has one
// path and every request names it (GetOn).
type sideSelector struct{}

func (sideSelector) Choose() (pathsel.PathID, error)       { return 0, nil }
func (sideSelector) Observe(pathsel.PathID, float64) error { return nil }
func (sideSelector) AddPath(pathsel.PathID) error          { return nil }
func (sideSelector) RemovePath(pathsel.PathID) error       { return nil }
