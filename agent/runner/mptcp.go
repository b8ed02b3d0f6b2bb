package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/hetquic/hetquic/emu/lab"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/scenario"
	"golang.org/x/sys/unix"
)

// LabName is the emu/lab name the MPTCP baseline uses.
const LabName = "ctexp"

// ErrNoMPTCP says the MPTCP baseline cannot run here (no root lab, or a
// kernel without MPTCP); the error wrapping it says why.
var ErrNoMPTCP = errors.New("MPTCP baseline unavailable")

// RunAggregationMPTCP is experiment 3's kernel MPTCP baseline: the same
// two apps, each over its own MPTCP connection (HTTP/1.1 to origin's
// /bytes), over the same scenario's paths in the root lab (emu/lab). The
// lab counts whole IP packets against the rate, the relay UDP payloads:
// MPTCP's goodput ceiling is 1448/1500 of the rate, QUIC's a few % less
// than the rate too (its own headers).
func RunAggregationMPTCP(ctx context.Context, cfg AggConfig) (AggRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return AggRow{}, err
	}
	run, err := mptcpFetch(ctx, sc, cfg.Seed, cfg.MPTCPCC, []int64{cfg.Big, cfg.Small})
	if err != nil {
		return AggRow{}, err
	}
	durs, span := run.durs, run.span
	ideal := time.Duration(float64(cfg.Big+cfg.Small) / downRate(sc, nil) * float64(time.Second))
	return AggRow{Mode: "kernel MPTCP (lab)", Paths: "all", BigMs: stats.Ms(durs[0]), SmallMs: stats.Ms(durs[1]),
		MakespanMs: stats.Ms(span), IdealMs: stats.Ms(ideal), Efficiency: float64(ideal) / float64(span)}, nil
}

// mptcpRun is one MPTCP fetch: each download's time, the time until the
// last ended, the CPU the transfers took (from the first request to the
// last byte; cpucost.go), and the congestion control of the sending
// (server) socket as the kernel names it ("" if it would not say).
type mptcpRun struct {
	durs []time.Duration
	span time.Duration
	cpu  cpuUse
	cc   string
}

// mptcpFetch downloads sizes at once, each over its own MPTCP connection,
// over sc's paths in the root lab, with congestion control cc ("": the
// host's default).
func mptcpFetch(ctx context.Context, sc *scenario.Scenario, seed uint64, cc string, sizes []int64) (mptcpRun, error) {
	if err := lab.Available(); err != nil {
		return mptcpRun{}, fmt.Errorf("%w: %v", ErrNoMPTCP, err)
	}
	l, err := lab.Up(lab.Config{Name: LabName, Scenario: sc, Seed: seed})
	if err != nil {
		return mptcpRun{}, fmt.Errorf("%w: lab: %v", ErrNoMPTCP, err)
	}
	defer l.Close()
	if why := l.Stats().MPTCP; why != "" {
		return mptcpRun{}, fmt.Errorf("%w: %s", ErrNoMPTCP, why)
	}
	var ln net.Listener
	if err := l.InServer(func() (err error) {
		lc := net.ListenConfig{Control: setCongestion(cc)}
		lc.SetMultipathTCP(true)
		ln, err = lc.Listen(ctx, "tcp4", netip.AddrPortFrom(lab.ServerAddr, 0).String())
		return err
	}); err != nil {
		return mptcpRun{}, err
	}
	// The lab's namespaces take the host's net.ipv4.tcp_congestion_control
	// (bbr on some hosts, cubic on most) unless cc is set: accepted
	// subflows inherit the listener's, so the listener names the
	// baseline's algorithm.
	cc = congestionControl(ln)
	srv := &http.Server{Handler: origin.Handler(nil), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = l.InClient(func() error {
				d := net.Dialer{Timeout: 5 * time.Second}
				d.SetMultipathTCP(true)
				c, err = d.DialContext(ctx, "tcp4", addr)
				return err
			})
			return c, err
		}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	base := "http://" + ln.Addr().String()
	durs := make([]time.Duration, len(sizes))
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	meter := startCPU()
	start := time.Now()
	for i := range sizes {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/bytes/%d", base, sizes[i]), nil)
			if err != nil {
				errs[i] = err
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			n, err := checkPattern(resp.Body)
			durs[i] = time.Since(start)
			if err == nil && n != sizes[i] {
				err = fmt.Errorf("%d bytes, want %d", n, sizes[i])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	span := time.Since(start)
	cpu := meter.stop()
	if err := errors.Join(errs...); err != nil {
		return mptcpRun{}, fmt.Errorf("mptcp: %w", err)
	}
	return mptcpRun{durs: durs, span: span, cpu: cpu, cc: cc}, nil
}

// directHTTPS is experiment 1's TCP baseline: HTTPS (TCP + TLS 1.3,
// HTTP/1.1) to origin's /bytes over the scenario's single path in the root
// lab; cold is dial + handshakes + request, warm a second request on the
// same connection.
func directHTTPS(ctx context.Context, sc *scenario.Scenario, cfg HandshakeConfig) (cold, warm []time.Duration, err error) {
	if err := lab.Available(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNoMPTCP, err)
	}
	l, err := lab.Up(lab.Config{Name: LabName, Scenario: sc, Seed: cfg.Seed})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: lab: %v", ErrNoMPTCP, err)
	}
	defer l.Close()
	pair, err := selfsigned.New()
	if err != nil {
		return nil, nil, err
	}
	var ln net.Listener
	if err := l.InServer(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(lab.ServerAddr, 0).String())
		return err
	}); err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: origin.Handler(nil), ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair.Cert}}}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	target := fmt.Sprintf("https://localhost:%d/bytes/%d", ln.Addr().(*net.TCPAddr).Port, cfg.Size)
	dst := ln.Addr().String()
	for range cfg.Rounds {
		tr := &http.Transport{DisableCompression: true, TLSClientConfig: &tls.Config{RootCAs: pair.Pool},
			DialContext: func(ctx context.Context, network, _ string) (c net.Conn, err error) {
				err = l.InClient(func() error {
					d := net.Dialer{Timeout: 5 * time.Second}
					c, err = d.DialContext(ctx, "tcp4", dst)
					return err
				})
				return c, err
			}}
		hc := &http.Client{Transport: tr}
		for i := range 2 {
			start := time.Now()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return nil, nil, err
			}
			resp, err := hc.Do(req)
			if err != nil {
				tr.CloseIdleConnections()
				return nil, nil, fmt.Errorf("direct HTTPS: %w", err)
			}
			n, err := checkPattern(resp.Body)
			resp.Body.Close()
			d := time.Since(start)
			if err == nil && n != cfg.Size {
				err = fmt.Errorf("%d bytes, want %d", n, cfg.Size)
			}
			if err != nil {
				tr.CloseIdleConnections()
				return nil, nil, fmt.Errorf("direct HTTPS: %w", err)
			}
			if i == 0 {
				cold = append(cold, d)
			} else {
				warm = append(warm, d)
			}
		}
		tr.CloseIdleConnections()
	}
	return cold, warm, nil
}

// setCongestion is a ListenConfig.Control that sets the socket's TCP
// congestion control to cc (nil for "": the default).
func setCongestion(cc string) func(network, address string, rc syscall.RawConn) error {
	if cc == "" {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}); cerr != nil {
			return cerr
		}
		if err != nil {
			return fmt.Errorf("congestion control %q (see net.ipv4.tcp_available_congestion_control): %w", cc, err)
		}
		return nil
	}
}

// congestionControl is the TCP congestion control of ln's socket
// (getsockopt TCP_CONGESTION), "" where the platform or socket will not
// say.
func congestionControl(ln net.Listener) string {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return ""
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}
