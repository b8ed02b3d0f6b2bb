package pcm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// SideProber measures the round trip of idle paths out of band without
// the main connection's paths. quic-go v0.65 answers Path.Probe on a
// validated idle path late or not at all (TestQuicGoIdleProbesMeasureNoRTT:
// connection IDs run out at every switch), so each probed path gets a
// light connection of its own instead: a one-path Client on the path's
// local address, on which a probe is a request for an empty body
// (/bytes/0), timed from its stream to its last byte — one round trip,
// independent of the server's path state. Its cost: a handshake per path
// (once per side connection), the request's and response's headers and the
// ACKs per probe (Bytes counts both), and a connection's state on the
// server per probed path.
type SideProber struct {
	sides   []*Client
	timeout time.Duration
}

// sideTarget is what a probe asks for: the smallest response an origin
// serves (origin.Handler: /bytes/N).
const sideTarget = "/bytes/0"

// DialSideProber opens one side connection per path of cfg (cfg.Paths,
// each on its own; the selector and strategy are not used). timeout
// bounds one probe: a probe that takes longer measures +Inf.
func DialSideProber(ctx context.Context, cfg Config, timeout time.Duration) (*SideProber, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("pcm: side prober: timeout %v must be > 0", timeout)
	}
	p := &SideProber{timeout: timeout}
	for _, lp := range cfg.Paths {
		one := cfg
		one.Paths = []LocalPath{lp}
		one.Selector = sideSelector{}
		// A response that stalls is given up at the probe timeout, not
		// the client's default second (GetOn waits for its stall watch).
		one.StallTimeout, one.ProbeTimeout = timeout, timeout
		c, err := Dial(ctx, one)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("pcm: side connection on %s: %w", lp.Name, err), p.Close())
		}
		p.sides = append(p.sides, c)
	}
	return p, nil
}

// Probe measures path i's round trip in ms: +Inf when the probe failed or
// took longer than the prober's timeout (the path may be down; that is
// information for the selector, not an error). It blocks for at most the
// timeout; callers that must not wait run it on a goroutine of their own.
func (p *SideProber) Probe(ctx context.Context, i int) float64 {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	res, err := p.sides[i].GetOn(ctx, 0, sideTarget, nil)
	if err != nil {
		return math.Inf(1)
	}
	return float64(res.TCT()) / float64(time.Millisecond)
}

// Bytes is what the side connections have sent and received so far
// (QUIC packets, without UDP and IP headers; quic-go's ConnectionStats),
// handshakes included.
func (p *SideProber) Bytes() uint64 {
	var n uint64
	for _, c := range p.sides {
		s := c.conn.ConnectionStats()
		n += s.BytesSent + s.BytesReceived
	}
	return n
}

// Close closes every side connection and its socket.
func (p *SideProber) Close() error {
	var err error
	for _, c := range p.sides {
		err = errors.Join(err, c.Close())
	}
	p.sides = nil
	return err
}

// sideSelector stands in for a side connection's selector: it has one
// path and every request names it (GetOn).
type sideSelector struct{}

func (sideSelector) Choose() (pathsel.PathID, error)       { return 0, nil }
func (sideSelector) Observe(pathsel.PathID, float64) error { return nil }
func (sideSelector) AddPath(pathsel.PathID) error          { return nil }
func (sideSelector) RemovePath(pathsel.PathID) error       { return nil }
