// Package measure is PCM-QUIC's real-network measurement harness: a
// plain quic-go origin (no PCM) behind hetquic's emulator (the UDP relay on
// loopback, one client address per scenario path), and the measurements
// run through it: switch cost and failover (PCM journal §4). Real-mode
// experiments (runner/realenv) and the simulator's validation
// (sim/vsreal) send their requests through the same Bench.
package measure

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/scenario"
)

// Bench is a plain quic-go origin (no PCM) behind hetquic's emulator (the UDP
// relay on loopback, one client address per scenario path): what real runs
// and the PCM measurements send their requests through.
type Bench struct {
	sc    *scenario.Scenario
	srv   *origin.Server
	relay *udprelay.Relay
	roots *tls.Config
}

// NewBench starts the origin and the relay for sc; sc's timed events are
// not run (callers apply changes themselves, e.g. through Relay().Engine()).
func NewBench(sc *scenario.Scenario, seed uint64) (_ *Bench, err error) {
	b := &Bench{sc: sc}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	pair, err := selfsigned.New()
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if b.srv, err = origin.Serve(udp, origin.Config{TLS: &tls.Config{Certificates: []tls.Certificate{pair.Cert}}}); err != nil {
		udp.Close()
		return nil, err
	}
	quiet := *sc
	quiet.Events = nil
	if b.relay, err = udprelay.Loopback(&quiet, udp.LocalAddr().(*net.UDPAddr).AddrPort(), seed); err != nil {
		return nil, err
	}
	b.roots = &tls.Config{RootCAs: pair.Pool}
	return b, nil
}

// Relay is the emulator the bench's paths run through.
func (b *Bench) Relay() *udprelay.Relay { return b.relay }

// Dial connects a PCM client over every path. The caller chooses each
// request's path (GetOn); the client's own selector is never asked.
func (b *Bench) Dial(ctx context.Context, rebind bool) (*pcm.Client, error) {
	return pcm.Dial(ctx, pcm.Config{
		Server: b.relay.Addr().String(), ServerName: "localhost", TLS: b.roots,
		Paths: b.localPaths(), Selector: noSelector{}, Rebind: rebind,
	})
}

// SideProber opens a side connection on every path (pcm.SideProber), each
// probe bounded by timeout: out-of-band probes of idle paths that need no
// path state on the server.
func (b *Bench) SideProber(ctx context.Context, timeout time.Duration) (*pcm.SideProber, error) {
	return pcm.DialSideProber(ctx, pcm.Config{
		Server: b.relay.Addr().String(), ServerName: "localhost", TLS: b.roots, Paths: b.localPaths(),
	}, timeout)
}

// localPaths is one client path per scenario path, on its relay address.
func (b *Bench) localPaths() []pcm.LocalPath {
	var paths []pcm.LocalPath
	for i, a := range b.relay.PathAddrs() {
		paths = append(paths, pcm.LocalPath{Name: b.sc.Paths[i].Name, Addr: a})
	}
	return paths
}

// Close stops the relay and the origin.
func (b *Bench) Close() error {
	var err error
	if b.relay != nil {
		err = errors.Join(err, b.relay.Close())
	}
	if b.srv != nil {
		err = errors.Join(err, b.srv.Close())
	}
	return err
}

// noSelector stands in for the client's own selector when the caller
// chooses every path (GetOn) and the client never asks its own.
type noSelector struct{}

func (noSelector) Choose() (pathsel.PathID, error)       { return 0, pathsel.ErrNoPaths }
func (noSelector) Observe(pathsel.PathID, float64) error { return nil }
func (noSelector) AddPath(pathsel.PathID) error          { return nil }
func (noSelector) RemovePath(pathsel.PathID) error       { return nil }

// dialTwin starts a bench over two identical paths, a and b, of rtt ms
// round trip at 100 Mbit/s (the switch-cost and failover setting) and
// connects a client over both; closeAll stops both.
func dialTwin(ctx context.Context, name string, rtt float64, rebind bool) (_ *Bench, _ *pcm.Client, closeAll func(), err error) {
	link := scenario.Link{DelayMs: rtt / 2, RateMbps: 100}
	b, err := NewBench(&scenario.Scenario{Name: name, Paths: []scenario.Path{
		{Name: "a", Up: link, Down: link}, {Name: "b", Up: link, Down: link},
	}}, 1)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := b.Dial(ctx, rebind)
	if err != nil {
		b.Close()
		return nil, nil, nil, err
	}
	return b, c, func() { c.Close(); b.Close() }, nil
}
