package pcm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"
)

// dialStagger is the head start each path's handshake gets over the
// next: RFC 8305 §5's recommended connection attempt delay (250 ms). A
// path that answers within it wins alone, so a healthy first path costs
// the others nothing; a black-holed one delays the connection by one
// stagger, not by a handshake timeout.
const dialStagger = 250 * time.Millisecond

// attempt is one path's handshake in a race.
type attempt struct {
	path  int
	tr    *quic.Transport
	moves *moveWatch
	conn  *quic.Conn
	err   error
}

// raceDial dials the server on every path in turn (dialStagger apart, the
// next at once when one fails) and keeps the first connection that
// completes; the others are cancelled and closed. Each handshake gets a
// socket of its own on its path's address, so that every path, the
// winner's included, is later used through quic-go's path API on its own
// transport.
//
// paths is c.paths as the caller read it under c.mu (a redial runs
// without c.mu, and AddPath may replace the slice meanwhile).
func (c *Client) raceDial(ctx context.Context, paths []*pathState, order []int) (*session, int, error) {
	tlsConf, qconf := c.handshakeConfigs()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan *attempt)
	timer := time.NewTimer(0)
	defer timer.Stop()
	next, running := 0, 0
	var errs []error
	var won *attempt
	done := ctx.Done()
	for won == nil && (next < len(order) || running > 0) {
		select {
		case <-done:
			// No more attempts (a failover's redial the migration made
			// useless, or the client closed): wait for those running.
			errs = append(errs, ctx.Err())
			next, done = len(order), nil
		case <-timer.C:
			if next < len(order) {
				if err := c.startAttempt(rctx, order[next], paths[order[next]], tlsConf, qconf, results); err != nil {
					errs = append(errs, err)
					timer.Reset(0)
				} else {
					running++
					timer.Reset(dialStagger)
				}
				next++
			}
		case a := <-results:
			running--
			if a.err == nil {
				won = a
				break
			}
			errs = append(errs, fmt.Errorf("via %s: %w", paths[a.path].Name, a.err))
			a.tr.Close()
			a.tr.Conn.Close()
			timer.Reset(0)
		}
	}
	cancel()
	for range running { // the losers: wait for each, close what completed
		a := <-results
		if a.conn != nil {
			a.conn.CloseWithError(0, "another path won the dial race")
		}
		a.tr.Close()
		a.tr.Conn.Close()
	}
	if won == nil {
		return nil, -1, fmt.Errorf("pcm: dial %s: %w", c.cfg.Server, errors.Join(errs...))
	}
	return c.newSession(won.conn, won.tr, won.moves), won.path, nil
}

// dialOrder is the order the race tries the paths in: the configured one,
// with the paths named in avoid last (those a previous connection to the
// server found down: Config.avoid, set by Transport; at a redial, those
// down now), and removed ones never. A redial calls it under c.mu.
func dialOrder(paths []*pathState, avoid map[string]bool) []int {
	var first, last []int
	for i, ps := range paths {
		if ps.removed {
			continue
		}
		if avoid[ps.Name] {
			last = append(last, i)
		} else {
			first = append(first, i)
		}
	}
	return append(first, last...)
}

// startAttempt opens path i's handshake socket and starts its handshake,
// which reports to results.
func (c *Client) startAttempt(ctx context.Context, i int, ps *pathState, tlsConf *tls.Config, qconf *quic.Config, results chan<- *attempt) error {
	udp, err := c.cfg.ListenPacket(ps.Addr.AsSlice())
	if err != nil {
		return fmt.Errorf("path %s: bind %s: %w", ps.Name, ps.Addr, err)
	}
	c.local.set(udp.LocalAddr(), i)
	dialAddr, _ := addrPort(udp.LocalAddr())
	a := &attempt{path: i, tr: &quic.Transport{Conn: udp}}
	a.moves = newMoveWatch(qconf.Tracer, c.rx, c.local, dialAddr)
	q := qconf.Clone()
	q.Tracer = a.moves.tracer
	go func() {
		a.conn, a.err = a.tr.Dial(ctx, c.remote, tlsConf, q)
		results <- a
	}()
	return nil
}
