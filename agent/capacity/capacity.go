// Package capacity measures what one ct-server costs per device: a real
// ct-server process under its default configuration and N devices on
// loopback, each a real ct-client (agent.Client) with its own two paths
// (two QUIC connections from two source addresses of its own, keep-alive
// on) and an app behind its proxy. The devices connect in waves, stay idle,
// then fetch small objects at random times. Run reports, per device count,
// ct-server's RSS (idle, and its peak while active), the handshakes it
// completed per second, its CPU while idle and the time to first byte of
// the apps' requests.
//
// The devices run in the measuring process: what ct-server is measured
// for is its own process, but both share the machine's cores, so the
// latency is that of the whole lab, an upper bound on ct-server's share.
package capacity

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/internal/serverproc"
	"github.com/hetquic/hetquic/internal/cputime"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/origin"
)

// Config sizes a run. Zero fields take Default's.
type Config struct {
	// Devices are the device counts measured, each against a fresh
	// ct-server.
	Devices []int
	// Server starts "hetquic agent server" with args (the harness adds
	// everything after "agent server"): a real process, so that its RSS and
	// CPU are ct-server's alone.
	Server func(args ...string) *exec.Cmd
	// Wave is how many devices dial at once; the next wave starts when
	// every path of this one is up.
	Wave int
	// Idle is how long every device stays connected and idle before
	// ct-server's RSS is read.
	Idle time.Duration
	// Active is how long the devices' apps fetch; Interval is the mean
	// time between one device's requests (exponential gaps), Bytes what
	// each fetches.
	Active   time.Duration
	Interval time.Duration
	Bytes    int
	// Seed draws the request times.
	Seed uint64
	Log  io.Writer // progress lines (nil: none)
}

// Default is the size: 100 and 1000 devices.
var Default = Config{
	Devices: []int{100, 1000},
	Wave:    defaultWave,
	Idle:    2*wire.DefaultIdleTimeout/4 + 2*time.Second,
	Active:  20 * time.Second, Interval: defaultInterval, Bytes: 16 << 10, Seed: 1,
}

// defaultInterval: a device's apps fetch something every 10 s on average
// (1000 devices: 100 requests a second). At one a second, 1000 devices ask
// for more CPU than two cores have (BENCHMARKS.md, "ct-server capacity").
const defaultInterval = 10 * time.Second

// defaultWave: 64 devices are 128 handshakes, half of ct-server's
// pre-authentication cap (server.DefaultMaxPreAuth, 256), so that no dial
// is refused and the rate is ct-server's, not its back-off's.
const defaultWave = 64

// Goals of the issue for 1000 idle devices on two cores.
const (
	GoalDevices = 1000
	GoalRSS     = 512 << 20
	GoalP99     = 50 * time.Millisecond
)

func (c Config) withDefaults() Config {
	d := Default
	if len(c.Devices) > 0 {
		d.Devices = c.Devices
	}
	pos := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	pos(&d.Idle, c.Idle)
	pos(&d.Active, c.Active)
	pos(&d.Interval, c.Interval)
	if c.Wave > 0 {
		d.Wave = c.Wave
	}
	if c.Bytes > 0 {
		d.Bytes = c.Bytes
	}
	if c.Seed != 0 {
		d.Seed = c.Seed
	}
	d.Server, d.Log = c.Server, c.Log
	return d
}

// MaxDevices is the most devices a run may have: each device's two paths
// take source addresses 127.2.x.y and 127.3.x.y, one per device (65536
// each, less a margin).
const MaxDevices = 65000

// Row is what one device count measured.
type Row struct {
	Devices int
	BaseRSS int64 // ct-server's RSS before any device
	IdleRSS int64 // after Idle with every device connected
	PeakRSS int64 // ct-server's VmHWM at the end (the active phase's peak)
	// Handshakes is the QUIC connections completed (two per device) in
	// HandshakeTime, the waves' total.
	Handshakes    int
	HandshakeTime time.Duration
	IdleCPU       time.Duration // ct-server's CPU time over Idle
	// ActiveCPU is ct-server's CPU time over Active, LabCPU this
	// process's (the devices, their apps and the app-server).
	ActiveCPU, LabCPU time.Duration
	PathsUp           int           // paths connected at the end of Idle
	Requests          int           // requests that completed intact
	Failed            int           // requests that failed or were short
	P50, P99          time.Duration // time to first byte
}

// PerDevice is ct-server's idle RSS growth per device.
func (r Row) PerDevice() int64 { return (r.IdleRSS - r.BaseRSS) / int64(max(r.Devices, 1)) }

// HandshakesPerSec is the connections completed per second of dialling.
func (r Row) HandshakesPerSec() float64 {
	if r.HandshakeTime <= 0 {
		return 0
	}
	return float64(r.Handshakes) / r.HandshakeTime.Seconds()
}

// Report is a run: a row per device count.
type Report struct {
	Config Config
	Rows   []Row
}

// Run measures every device count of cfg in turn. It fails only when it
// cannot run; failed requests and paths that did not stay up are in the
// rows.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Server == nil {
		return nil, errors.New("capacity: no ct-server command")
	}
	for _, n := range cfg.Devices {
		if n < 1 || n > MaxDevices {
			return nil, fmt.Errorf("capacity: %d devices: want 1 to %d", n, MaxDevices)
		}
	}
	upL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	upSrv := origin.ServeTCP(upL, nil)
	defer upSrv.Close()
	rep := &Report{Config: cfg}
	for _, n := range cfg.Devices {
		row, err := runOne(ctx, cfg, n, upL.Addr().String())
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// runOne measures n devices against a fresh ct-server.
func runOne(ctx context.Context, cfg Config, n int, up string) (Row, error) {
	dir, err := os.MkdirTemp("", "hetquic-capacity-")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	sp, err := startServer(cfg, dir, up, n)
	if err != nil {
		return Row{}, err
	}
	defer sp.Stop()
	if err := sp.WaitHealthy(ctx); err != nil {
		return Row{}, fmt.Errorf("capacity: ct-server did not come up: %w", err)
	}
	pid := sp.Pid()
	row := Row{Devices: n, BaseRSS: serverproc.Status(pid, "VmRSS")}
	devs := make([]*device, 0, n)
	defer func() { closeDevices(devs) }()
	start := time.Now()
	for lo := 0; lo < n; lo += cfg.Wave {
		wave, err := dialWave(ctx, sp, lo, min(lo+cfg.Wave, n))
		devs = append(devs, wave...)
		if err != nil {
			return Row{}, err
		}
	}
	row.HandshakeTime, row.Handshakes = time.Since(start), 2*n
	cfg.logf("capacity: %d devices connected in %v; idle for %v", n, row.HandshakeTime.Round(time.Millisecond), cfg.Idle)
	cpu0 := serverproc.CPU(pid)
	if !wire.SleepCtx(ctx, cfg.Idle) {
		return Row{}, ctx.Err()
	}
	row.IdleCPU, row.IdleRSS = serverproc.CPU(pid)-cpu0, serverproc.Status(pid, "VmRSS")
	for _, d := range devs {
		row.PathsUp += d.c.Ready()
	}
	cfg.logf("capacity: idle RSS %d MiB; active for %v", row.IdleRSS>>20, cfg.Active)
	cpu0, lab0 := serverproc.CPU(pid), cputime.Process()
	ttfb, failed := activePhase(ctx, cfg, devs, up)
	row.ActiveCPU, row.LabCPU = serverproc.CPU(pid)-cpu0, cputime.Process()-lab0
	row.PeakRSS = serverproc.Status(pid, "VmHWM")
	row.Requests, row.Failed = len(ttfb), failed
	row.P50, row.P99 = quantile(ttfb, 0.50), quantile(ttfb, 0.99)
	return row, nil
}

// device is one ct-client and its proxy's address.
type device struct {
	c     *agent.Client
	l     net.Listener
	proxy *url.URL
}

// devicePaths are device i's two paths, each from a loopback address of
// its own, as two interfaces of a real device are.
func devicePaths(i int) []agent.LocalPath {
	k := i + 1 // no .0.0 host
	return []agent.LocalPath{
		{Name: "a", Addr: netip.AddrFrom4([4]byte{127, 2, byte(k >> 8), byte(k)})},
		{Name: "b", Addr: netip.AddrFrom4([4]byte{127, 3, byte(k >> 8), byte(k)})},
	}
}

// dialWave starts devices lo..hi-1 and waits until both paths of each are
// up; it returns the devices it started, also on an error.
func dialWave(ctx context.Context, sp *serverProc, lo, hi int) ([]*device, error) {
	var devs []*device
	for i := lo; i < hi; i++ {
		c, err := agent.NewClient(agent.ClientConfig{Server: sp.UDPAddr, ServerName: "localhost", CAFile: sp.CA, TLS: &tls.Config{},
			Token: sp.tokens[i], Paths: devicePaths(i)})
		if err != nil {
			return devs, fmt.Errorf("capacity: device %d: %w", i, err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.Close()
			return devs, err
		}
		go c.Serve(l)
		devs = append(devs, &device{c: c, l: l, proxy: &url.URL{Scheme: "http", Host: l.Addr().String()}})
	}
	wctx, cancel := context.WithTimeout(ctx, waveTimeout)
	defer cancel()
	for i, d := range devs {
		if err := d.c.WaitReady(wctx, 2); err != nil {
			return devs, fmt.Errorf("capacity: device %d: both paths not up in %v: %w", lo+i, waveTimeout, err)
		}
	}
	return devs, nil
}

// waveTimeout bounds a wave's dialling: far longer than 128 handshakes
// take on a loaded machine, so only a ct-server that stopped answering
// reaches it.
const waveTimeout = time.Minute

func closeDevices(devs []*device) {
	var wg sync.WaitGroup
	for _, d := range devs {
		wg.Go(func() {
			d.c.Close()
			d.l.Close()
		})
	}
	wg.Wait()
}

// activePhase runs every device's app for cfg.Active: requests of
// cfg.Bytes at exponential gaps of mean cfg.Interval, each checked byte for
// byte. It returns the times to first byte of the intact ones and how many
// failed.
func activePhase(ctx context.Context, cfg Config, devs []*device, up string) ([]time.Duration, int) {
	actx, cancel := context.WithTimeout(ctx, cfg.Active)
	defer cancel()
	var mu sync.Mutex
	var ttfb []time.Duration
	failed := 0
	var wg sync.WaitGroup
	for i, d := range devs {
		wg.Go(func() {
			got, bad := d.app(actx, cfg, newGaps(cfg.Seed, i, cfg.Interval), up)
			mu.Lock()
			ttfb, failed = append(ttfb, got...), failed+bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return ttfb, failed
}

// app fetches until ctx ends, waiting gap() before each request.
func (d *device) app(ctx context.Context, cfg Config, gap func() time.Duration, up string) ([]time.Duration, int) {
	tr := &http.Transport{Proxy: http.ProxyURL(d.proxy), DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var ttfb []time.Duration
	failed := 0
	u := fmt.Sprintf("http://%s/bytes/%d", up, cfg.Bytes)
	for wire.SleepCtx(ctx, gap()) {
		t, err := fetch(ctx, hc, u, cfg.Bytes)
		switch {
		case ctx.Err() != nil: // cut by the phase's end: neither
		case err != nil:
			failed++
			cfg.logf("capacity: request: %v", err)
		default:
			ttfb = append(ttfb, t)
		}
	}
	return ttfb, failed
}

// fetch GETs u, checks every byte against the origin pattern and returns
// the time to the response's first byte.
func fetch(ctx context.Context, hc *http.Client, u string, size int) (time.Duration, error) {
	var first time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	if err := checkBody(resp.Body, size); err != nil {
		return 0, err
	}
	return first.Sub(t0), nil
}

// checkBody reads r whole and checks it is the origin's first size bytes.
func checkBody(r io.Reader, size int) error {
	buf := make([]byte, 16<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		for i := range k {
			if buf[i] != origin.PatternByte(n+int64(i)) {
				return fmt.Errorf("byte %d wrong", n+int64(i))
			}
		}
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if n != int64(size) {
		return fmt.Errorf("%d of %d bytes", n, size)
	}
	return nil
}

// serverProc is the ct-server process under test and the devices'
// tokens.
type serverProc struct {
	*serverproc.Proc
	tokens []string
}

// startServer starts ct-server by cfg.Server with default limits, an
// allow-list of up and n clients; its files go in dir.
func startServer(cfg Config, dir, up string, n int) (*serverProc, error) {
	var conf strings.Builder
	fmt.Fprintf(&conf, "allow: [%s]\nclients:\n", up)
	tokens := make([]string, n)
	for i := range tokens {
		tok, err := identity.NewToken(rand.Read)
		if err != nil {
			return nil, err
		}
		tokens[i] = tok
		fmt.Fprintf(&conf, "  - {id: dev%d, token: %q}\n", i, tok)
	}
	p, err := serverproc.Start(cfg.Server, dir, conf.String(), cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	return &serverProc{Proc: p, tokens: tokens}, nil
}
