package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/lab"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/scenario"
	"golang.org/x/sys/unix"
)

// LabName is the emu/lab name the MPTCP baseline uses; upLab adds a
// digit when another process holds it.
const LabName = "ctexp"

// labNames bounds how many baselines may run at once on one host (two
// people's experiments, or a sweep's workers): each gets its own lab.
const labNames = 8

// upLab brings up a lab for sc under LabName, or LabName2 … while another
// live process holds the name, so concurrent experiments each get a lab
// instead of one losing its MPTCP row.
func upLab(sc *scenario.Scenario, seed uint64) (*lab.Lab, error) {
	name := LabName
	for i := 2; ; i++ {
		l, err := lab.Up(lab.Config{Name: name, Scenario: sc, Seed: seed})
		if err == nil || !errors.Is(err, lab.ErrInUse) || i > labNames {
			return l, err
		}
		name = fmt.Sprintf("%s%d", LabName, i)
	}
}

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
	run, err := mptcpFetch(ctx, sc, cfg.Seed, cfg.MPTCPCC, []int64{cfg.Big, cfg.Small}, false)
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
//
// warm gives the baseline what ct's modes get (stripeOnce): one connection
// that first downloads for warmFor (warmUp, as ct's) and rests settleTime,
// then carries the measured download (sizes must then hold one size).
// Cold, the measured time holds the handshakes and every subflow's slow
// start, which ct's warmed agent had behind it.
func mptcpFetch(ctx context.Context, sc *scenario.Scenario, seed uint64, cc string, sizes []int64, warm bool) (mptcpRun, error) {
	if err := lab.Available(); err != nil {
		return mptcpRun{}, fmt.Errorf("%w: %v", ErrNoMPTCP, err)
	}
	quiet := *sc
	quiet.Events = nil // started with the transfer, as for ct (startEvents)
	l, err := upLab(&quiet, seed)
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
	var dials atomic.Int32
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: !warm,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			dials.Add(1)
			err = l.InClient(func() error {
				d := net.Dialer{Timeout: 5 * time.Second}
				d.SetMultipathTCP(true)
				c, err = d.DialContext(ctx, "tcp4", addr)
				return err
			})
			return c, err
		}}
	if warm {
		tr.MaxConnsPerHost = 1 // the measured download on the warmed connection
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	base := "http://" + ln.Addr().String()
	if warm {
		if err := warmUp(ctx, func(ctx context.Context) error {
			_, err := getChecked(ctx, hc, fmt.Sprintf("%s/bytes/%d", base, warmPiece), "", warmPiece)
			return err
		}); err != nil {
			return mptcpRun{}, fmt.Errorf("mptcp: warm-up: %w", err)
		}
		if !wire.SleepCtx(ctx, settleTime(sc)) {
			return mptcpRun{}, ctx.Err()
		}
	}
	durs := make([]time.Duration, len(sizes))
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	meter := startCPU()
	stop := startEvents(l.Engine(), sc, slog.New(slog.DiscardHandler))
	defer stop()
	start := time.Now()
	for i := range sizes {
		wg.Go(func() {
			_, errs[i] = getChecked(ctx, hc, fmt.Sprintf("%s/bytes/%d", base, sizes[i]), "", sizes[i])
			durs[i] = time.Since(start)
		})
	}
	wg.Wait()
	span := time.Since(start)
	cpu := meter.stop()
	if err := errors.Join(errs...); err != nil {
		return mptcpRun{}, fmt.Errorf("mptcp: %w", err)
	}
	if n := dials.Load(); warm && n != 1 {
		return mptcpRun{}, fmt.Errorf("mptcp: %d connections, want the warmed one only", n)
	}
	return mptcpRun{durs: durs, span: span, cpu: cpu, cc: cc}, nil
}

// httpsTimes are experiment 1's TCP rows: cold and warm times over TLS
// 1.3 and cold times over TLS 1.2, the Cybertwin paper's comparator.
type httpsTimes struct {
	cold13, warm13, cold12 []time.Duration
}

// directHTTPS is experiment 1's TCP baseline: HTTPS/1.1 over TCP to
// origin's /bytes over the scenario's single path in the root lab (see
// labHTTPS), so TCP meets the same one-way delays as the relay gives the
// QUIC rows. Each round opens a fresh TCP connection with a fresh TLS
// client (no session cache, so every handshake is a full one): cold is
// dial + handshakes + request, warm a second request on the same
// connection; TLS 1.3 rounds first, then TLS 1.2 (crypto/tls has no False
// Start, so a TLS 1.2 client waits for the server's Finished before it
// sends the request).
func directHTTPS(ctx context.Context, sc *scenario.Scenario, cfg HandshakeConfig) (httpsTimes, error) {
	var out httpsTimes
	h, err := startLabHTTPS(ctx, sc, cfg.Seed, "")
	if err != nil {
		return out, err
	}
	defer h.Close()
	for range cfg.Rounds {
		ds, err := h.client(cfg.Size, tls.VersionTLS13).round(ctx, 2)
		if err != nil {
			return out, err
		}
		out.cold13, out.warm13 = append(out.cold13, ds[0]), append(out.warm13, ds[1])
	}
	for range cfg.Rounds {
		ds, err := h.client(cfg.Size, tls.VersionTLS12).round(ctx, 1)
		if err != nil {
			return out, err
		}
		out.cold12 = append(out.cold12, ds[0])
	}
	return out, nil
}

// labHTTPS is end-to-end HTTPS in the root lab (emu/lab): origin's handler
// behind TLS on a TCP listener in the server namespace, reached from the
// client namespace across the lab's emulator, whose engine applies the
// scenario's delays, rate, queue and loss the way the relay does for the
// QUIC rows (both are emu.Engine over internal/linkmodel; the lab counts
// whole IP packets against the rate, the relay UDP payloads). Experiment 1
// (directHTTPS) and experiment 2's comparator (lossHTTPS) share it.
type labHTTPS struct {
	lab  *lab.Lab
	srv  *http.Server
	pool *x509.CertPool
	dst  string // the listener's address in the server namespace
	port int
	cc   string // the server socket's congestion control, as the kernel names it
}

// startLabHTTPS brings up the lab over sc with seed and the HTTPS server
// with TCP congestion control cc ("": the host's default, which the lab's
// namespaces inherit). It fails with an error wrapping ErrNoMPTCP where
// the lab cannot run.
func startLabHTTPS(ctx context.Context, sc *scenario.Scenario, seed uint64, cc string) (*labHTTPS, error) {
	if err := lab.Available(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMPTCP, err)
	}
	l, err := upLab(sc, seed)
	if err != nil {
		return nil, fmt.Errorf("%w: lab: %v", ErrNoMPTCP, err)
	}
	pair, err := selfsigned.New()
	if err != nil {
		l.Close()
		return nil, err
	}
	var ln net.Listener
	if err := l.InServer(func() (err error) {
		lc := net.ListenConfig{Control: setCongestion(cc)}
		ln, err = lc.Listen(ctx, "tcp4", netip.AddrPortFrom(lab.ServerAddr, 0).String())
		return err
	}); err != nil {
		l.Close()
		return nil, err
	}
	h := &labHTTPS{lab: l, pool: pair.Pool, dst: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port,
		cc: congestionControl(ln), // accepted connections inherit the listener's
		srv: &http.Server{Handler: origin.Handler(nil), ReadHeaderTimeout: 5 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair.Cert}}}}
	go h.srv.ServeTLS(ln, "", "")
	return h, nil
}

// client fetches size bytes over a fresh connection per round that must
// negotiate TLS version, dialled from the lab's client namespace.
func (h *labHTTPS) client(size int64, version uint16) httpsClient {
	dial := func(ctx context.Context, _, _ string) (c net.Conn, err error) {
		err = h.lab.InClient(func() error {
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err = d.DialContext(ctx, "tcp4", h.dst)
			return err
		})
		return c, err
	}
	return httpsClient{Target: fmt.Sprintf("https://localhost:%d/bytes/%d", h.port, size),
		Size: size, Pool: h.pool, Version: version, Dial: dial}
}

// Close stops the server and takes the lab down.
func (h *labHTTPS) Close() {
	h.srv.Close()
	h.lab.Close()
}

// httpsClient fetches Target (Size bytes of origin's pattern) over HTTPS/1.1,
// each round over a fresh connection that must negotiate TLS Version.
type httpsClient struct {
	Target  string
	Size    int64
	Pool    *x509.CertPool
	Version uint16 // tls.VersionTLS12 or tls.VersionTLS13: the client's only version
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
}

// round opens a fresh connection and sends n requests on it, one after the
// other; the first one's time includes the dial and the handshakes. Each
// body is checked byte by byte, and the connection's TLS version and
// protocol (HTTP/1.1) against the wanted ones.
func (h httpsClient) round(ctx context.Context, n int) ([]time.Duration, error) {
	tr := &http.Transport{DisableCompression: true, DialContext: h.Dial,
		TLSClientConfig: &tls.Config{RootCAs: h.Pool, MinVersion: h.Version, MaxVersion: h.Version}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var ds []time.Duration
	for range n {
		start := time.Now()
		if err := h.get(ctx, hc); err != nil {
			return nil, fmt.Errorf("direct HTTPS (%s): %w", tls.VersionName(h.Version), err)
		}
		ds = append(ds, time.Since(start))
	}
	return ds, nil
}

// get fetches Target once and checks the answer.
func (h httpsClient) get(ctx context.Context, hc *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Target, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.TLS == nil:
		return errors.New("not over TLS")
	case resp.TLS.Version != h.Version:
		return fmt.Errorf("negotiated %s, want %s", tls.VersionName(resp.TLS.Version), tls.VersionName(h.Version))
	case resp.ProtoMajor != 1:
		return fmt.Errorf("protocol %s, want HTTP/1.1", resp.Proto)
	}
	n, err := checkPattern(resp.Body)
	if err == nil && n != h.Size {
		err = fmt.Errorf("%d bytes, want %d", n, h.Size)
	}
	return err
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

// congestionControl is the TCP congestion control of s's socket (a
// listener or a connection; getsockopt TCP_CONGESTION), "" where the
// platform or socket will not say.
func congestionControl(s any) string {
	sc, ok := s.(syscall.Conn)
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
