package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/scenario"
)

// HandshakeConfig is experiment 1 (QUIC-only part): the time an app waits
// for a small object over one emulated path, through the agent (app →
// ct-client → QUIC over the path → ct-server → app-server) and directly
// over HTTP/3 (origin's QUIC server behind the same emulated path), cold
// (handshake included) and warm; with TCP, also direct HTTPS/1.1 over TCP
// in the root lab: TLS 1.3 cold and warm, and TLS 1.2 cold, the comparator
// of the Cybertwin paper (HTTPS with TLS 1.2, three handshake RTTs).
type HandshakeConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Path     string             // "": the first path
	Size     int64              // object bytes
	Rounds   int                // measurements per row (median reported)
	// TCP adds the direct HTTPS-over-TCP rows (rows 3–5), measured in the
	// root lab (emu/lab) over the same path and its one-way delays; RunHandshake then fails with an error
	// wrapping ErrNoMPTCP where the lab cannot run.
	TCP  bool
	Seed uint64
	Log  *slog.Logger
}

// HandshakeRow is one row of experiment 1: the median and minimum of
// Rounds times from the request (or, cold, the dial) to the last byte.
type HandshakeRow struct {
	Mode     string  `json:"mode"`
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	RTTms    float64 `json:"path_rtt_ms"` // the path's two delays, no queueing
}

// RunHandshake runs experiment 1.
func RunHandshake(ctx context.Context, cfg HandshakeConfig) ([]HandshakeRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	if cfg.Rounds < 1 {
		cfg.Rounds = 1
	}
	one, err := onePath(sc, cfg.Path)
	if err != nil {
		return nil, err
	}
	rtt := one.Paths[0].Up.DelayMs + one.Paths[0].Down.DelayMs

	// Through the agent: its connection is up before the app asks.
	e, err := newEnv(ctx, envConfig{Scenario: one, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	var ct []time.Duration
	for range cfg.Rounds {
		f, err := e.get(ctx, "app", cfg.Size)
		if err != nil {
			e.Close()
			return nil, err
		}
		ct = append(ct, f.Dur)
	}
	e.Close()

	// Direct HTTP/3.
	cold, warm, err := directH3(ctx, one, cfg)
	if err != nil {
		return nil, err
	}
	row := func(mode string, ds []time.Duration) HandshakeRow {
		xs := stats.FloatsMs(ds)
		return HandshakeRow{Mode: mode, MedianMs: stats.Median(xs), MinMs: slices.Min(xs), RTTms: rtt}
	}
	out := []HandshakeRow{
		row("ct agent (connection always on)", ct),
		row("direct HTTP/3, cold (handshake + request)", cold),
		row("direct HTTP/3, warm (request only)", warm),
	}
	if cfg.TCP {
		t, err := directHTTPS(ctx, one, cfg)
		if err != nil {
			return out, err
		}
		out = append(out, row("direct HTTPS/1.1, TCP + TLS 1.3 (lab), cold (TCP + TLS + request)", t.cold13),
			row("direct HTTPS/1.1, TCP + TLS 1.3 (lab), warm (request only)", t.warm13),
			row("direct HTTPS/1.1, TCP + TLS 1.2 (lab), cold (TCP + TLS + request)", t.cold12))
	}
	return out, nil
}

// onePath is sc with only the path called name ("": the first), the
// scenario of the experiments that measure one path alone.
func onePath(sc *scenario.Scenario, name string) (*scenario.Scenario, error) {
	if name == "" {
		name = sc.Paths[0].Name
	}
	one := *sc
	one.Paths = nil
	for _, p := range sc.Paths {
		if p.Name == name {
			one.Paths = append(one.Paths, p)
		}
	}
	if len(one.Paths) == 0 {
		return nil, fmt.Errorf("no path %q in scenario %s", name, sc.Name)
	}
	return &one, nil
}

func directH3(ctx context.Context, sc *scenario.Scenario, cfg HandshakeConfig) (cold, warm []time.Duration, err error) {
	pair, err := selfsigned.New()
	if err != nil {
		return nil, nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	srv, err := origin.Serve(udp, origin.Config{TLS: &tls.Config{Certificates: []tls.Certificate{pair.Cert}}})
	if err != nil {
		udp.Close()
		return nil, nil, err
	}
	defer srv.Close()
	relay, err := udprelay.Loopback(sc, udp.LocalAddr().(*net.UDPAddr).AddrPort(), cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	defer relay.Close()
	target := fmt.Sprintf("/bytes/%d", cfg.Size)
	for range cfg.Rounds {
		start := time.Now()
		c, err := pcm.Dial(ctx, pcm.Config{
			Server: relay.Addr().String(), ServerName: "localhost", TLS: &tls.Config{RootCAs: pair.Pool},
			Paths: []pcm.LocalPath{{Name: sc.Paths[0].Name, Addr: relay.PathAddrs()[0]}},
		})
		if err != nil {
			return nil, nil, err
		}
		for i := range 2 {
			res, err := c.GetOn(ctx, 0, target, io.Discard)
			if err == nil && res.TotalBytes != cfg.Size {
				err = fmt.Errorf("direct HTTP/3: %d bytes, want %d", res.TotalBytes, cfg.Size)
			}
			if err != nil {
				c.Close()
				return nil, nil, err
			}
			if i == 0 {
				cold = append(cold, time.Since(start))
			} else {
				warm = append(warm, res.TCT())
			}
			start = time.Now()
		}
		c.Close()
	}
	return cold, warm, nil
}
