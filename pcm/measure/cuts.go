package measure

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/scenario"
)

// The cuts measurement: a steady load of small GETs over three emulated
// paths, and paths black-holed through the emulator's control API, as a
// user's device loses Wi-Fi at the door.
const (
	// CutActive cuts the path the requests travel on; CutFirst the first
	// configured path (where a naive client redials); CutTwo the active
	// path, and then the one the client moved to.
	CutActive = "active"
	CutFirst  = "first"
	CutTwo    = "two in a row"

	// APIClient is pcm.Client's Get, APITransport pcm.Transport under an
	// http.Client, APIBaseline quic-go's http3.Transport on the first path.
	APIClient    = "pcm.Client"
	APITransport = "pcm.Transport"
	APIBaseline  = "http3.Transport"
)

// CutLoad is the load and the timing of a cuts run.
type CutLoad struct {
	Every    time.Duration // one GET every Every (10 ms)
	Size     int           // bytes per response (5 KB)
	Timeout  time.Duration // per request (5 s)
	CutAt    time.Duration // the first cut, from the start (2 s)
	Between  time.Duration // between the two cuts of CutTwo (2 s)
	After    time.Duration // the load goes on after the last cut (3 s)
	Settle   time.Duration // requests from the last cut + Settle count for BestShare (1 s)
	Outage   time.Duration // how long a cut lasts (120 s: for the run)
	RateMbps float64       // each path's rate (100)
}

// DefaultCutLoad is the load: a 5 KB GET every 10 ms, 5 s each.
func DefaultCutLoad() CutLoad {
	return CutLoad{Every: 10 * time.Millisecond, Size: 5 << 10, Timeout: 5 * time.Second,
		CutAt: 2 * time.Second, Between: 2 * time.Second, After: 3 * time.Second, Settle: time.Second,
		Outage: 120 * time.Second, RateMbps: 100}
}

// CutRow is one cut with one API.
type CutRow struct {
	Cut, API     string
	Sent, Failed int
	LongestMs    float64
	// RecoverMs is from the last cut until the first request sent after
	// it succeeded (+Inf: none did).
	RecoverMs float64
	// BestShare is the share of the successful requests sent from Settle
	// after the last cut on that moment's best live path (lowest RTT of
	// those not cut); NaN when the API does not say which path it used.
	BestShare float64
	Errors    []string // a few of the errors, for the reader
	// Cuts are the paths cut, in order; PerPath counts the successes
	// BestShare is of, per path.
	Cuts    []int
	PerPath []int
	// Slowdown is how far the load fell behind its schedule: the GETs
	// it was to send (one every Every) over those it sent, at least 1.
	// The sender's ticker drops the ticks of the time the process did
	// not run, so it is the host's load on this run, as the client felt it.
	Slowdown float64
}

// MeasureCuts runs every cut with every API over three paths of the given
// RTTs (ms), each on a fresh origin and emulator.
func MeasureCuts(ctx context.Context, rtts []float64, load CutLoad, apis []string) ([]CutRow, error) {
	var rows []CutRow
	for _, cut := range []string{CutActive, CutFirst, CutTwo} {
		for _, api := range apis {
			r, err := cutTrial(ctx, rtts, load, cut, api)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", cut, api, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// requester sends one GET of target and says which path carried it (-1:
// unknown).
type requester interface {
	get(ctx context.Context, target string) (path int, err error)
	close()
}

func cutTrial(ctx context.Context, rtts []float64, load CutLoad, cut, api string) (CutRow, error) {
	sc := &scenario.Scenario{Name: "cuts"}
	for i, rtt := range rtts {
		l := scenario.Link{DelayMs: rtt / 2, RateMbps: load.RateMbps}
		sc.Paths = append(sc.Paths, scenario.Path{Name: fmt.Sprintf("p%d", i), Up: l, Down: l})
	}
	b, err := NewBench(sc, 1)
	if err != nil {
		return CutRow{}, err
	}
	defer b.Close()
	control := httptest.NewServer(emu.ControlHandler(b.Relay().Engine(), nil))
	defer control.Close()
	base := fmt.Sprintf("https://localhost:%d", b.Relay().Addr().Port())
	rq, err := b.requester(ctx, api, base)
	if err != nil {
		return CutRow{}, err
	}
	defer rq.close()
	target := fmt.Sprintf("/bytes/%d", load.Size)
	run := &cutRun{load: load, rtts: rtts, cut: cut, control: control.URL, names: pathNames(sc), last: -1}
	row := run.drive(ctx, rq, target)
	row.Cut, row.API = cut, api
	if api == APIBaseline {
		row.BestShare = math.NaN()
	}
	return row, run.err
}

func pathNames(sc *scenario.Scenario) []string {
	var n []string
	for _, p := range sc.Paths {
		n = append(n, p.Name)
	}
	return n
}

// cutRun is one trial's load and its records.
type cutRun struct {
	load    CutLoad
	rtts    []float64
	cut     string
	control string
	names   []string

	mu      sync.Mutex
	start   time.Time
	cutTime time.Time // the last cut
	isCut   []bool
	last    int // the path of the latest success
	row     CutRow
	after   []int // paths of successes sent from the last cut + Settle
	recover time.Time
	err     error
}

// drive sends the load, making the cuts at their times, and waits for
// every request.
func (r *cutRun) drive(ctx context.Context, rq requester, target string) CutRow {
	r.start = time.Now()
	r.isCut = make([]bool, len(r.names))
	cuts := []time.Duration{r.load.CutAt}
	if r.cut == CutTwo {
		cuts = append(cuts, r.load.CutAt+r.load.Between)
	}
	end := cuts[len(cuts)-1] + r.load.After
	var wg sync.WaitGroup
	tick := time.NewTicker(r.load.Every)
	defer tick.Stop()
	for time.Since(r.start) < end && ctx.Err() == nil {
		if len(cuts) > 0 && time.Since(r.start) >= cuts[0] {
			r.cutOne()
			cuts = cuts[1:]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(ctx, rq, target)
		}()
		<-tick.C
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.row.RecoverMs = math.Inf(1)
	if !r.recover.IsZero() {
		r.row.RecoverMs = ms(r.recover.Sub(r.cutTime))
	}
	r.row.BestShare = share(r.after, r.best())
	r.row.Slowdown = max(1, float64(end/r.load.Every)/float64(max(r.row.Sent, 1)))
	r.row.PerPath = make([]int, len(r.rtts))
	for _, p := range r.after {
		if p >= 0 {
			r.row.PerPath[p]++
		}
	}
	return r.row
}

// cutOne black-holes a path through the control API: the active one (the
// path of the latest success) or, for CutFirst, path 0 — and the second
// cut of CutTwo is the active one again.
func (r *cutRun) cutOne() {
	r.mu.Lock()
	p := 0
	if r.cut != CutFirst && r.last >= 0 {
		p = r.last
	}
	r.isCut[p] = true
	r.row.Cuts = append(r.row.Cuts, p)
	r.cutTime = time.Now()
	r.recover = time.Time{}
	r.after = nil
	r.mu.Unlock()
	resp, err := http.Post(fmt.Sprintf("%s/paths/%s/outage?s=%g", r.control, r.names[p], r.load.Outage.Seconds()), "text/plain", nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			err = fmt.Errorf("control API: %s", resp.Status)
		}
	}
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
}

// one sends one request and records it.
func (r *cutRun) one(ctx context.Context, rq requester, target string) {
	ctx, cancel := context.WithTimeout(ctx, r.load.Timeout)
	defer cancel()
	sent := time.Now()
	path, err := rq.get(ctx, target)
	done := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.row.Sent++
	r.row.LongestMs = max(r.row.LongestMs, ms(done.Sub(sent)))
	if err != nil {
		r.row.Failed++
		if len(r.row.Errors) < 3 {
			r.row.Errors = append(r.row.Errors, err.Error())
		}
		return
	}
	if path >= 0 {
		r.last = path
	}
	if r.cutTime.IsZero() || sent.Before(r.cutTime) {
		return
	}
	if r.recover.IsZero() || done.Before(r.recover) {
		r.recover = done
	}
	if !sent.Before(r.cutTime.Add(r.load.Settle)) {
		r.after = append(r.after, path)
	}
}

// best is the lowest-RTT path not cut.
func (r *cutRun) best() int {
	b := -1
	for i, rtt := range r.rtts {
		if !r.isCut[i] && (b < 0 || rtt < r.rtts[b]) {
			b = i
		}
	}
	return b
}

func share(paths []int, best int) float64 {
	if len(paths) == 0 {
		return math.NaN()
	}
	n := 0
	for _, p := range paths {
		if p == best {
			n++
		}
	}
	return float64(n) / float64(len(paths))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// libConfig is a library user's configuration for the bench: every path,
// the default selector, probes and stall detection.
func (b *Bench) libConfig() pcm.Config {
	return pcm.Config{Server: b.relay.Addr().String(), ServerName: "localhost", TLS: b.roots, Paths: b.localPaths(), Logf: cutLogf}
}

// cutLogf receives the clients' warnings (tests set it).
var cutLogf func(string, ...any)

func (b *Bench) requester(ctx context.Context, api, base string) (requester, error) {
	switch api {
	case APIClient:
		c, err := pcm.Dial(ctx, b.libConfig())
		if err != nil {
			return nil, err
		}
		return clientReq{c}, nil
	case APITransport:
		cfg := b.libConfig()
		cfg.Server = ""
		tr := &pcm.Transport{Config: cfg}
		return &httpReq{rt: tr, base: base, done: func() { tr.Close() }, pathOf: pcmPath}, nil
	case APIBaseline:
		return b.baseline(base), nil
	}
	return nil, fmt.Errorf("no API %q", api)
}

type clientReq struct{ c *pcm.Client }

func (q clientReq) get(ctx context.Context, target string) (int, error) {
	res, err := q.c.Get(ctx, target, nil)
	return res.Path, err
}

func (q clientReq) close() { q.c.Close() }

// httpReq sends through an http.RoundTripper.
type httpReq struct {
	rt     http.RoundTripper
	base   string
	done   func()
	pathOf func(*http.Response) int
}

func (q *httpReq) get(ctx context.Context, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.base+target, nil)
	if err != nil {
		return -1, err
	}
	resp, err := (&http.Client{Transport: q.rt}).Do(req)
	if err != nil {
		return -1, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return q.pathOf(resp), err
}

func (q *httpReq) close() { q.done() }

func pcmPath(resp *http.Response) int {
	if r, ok := pcm.ResultOf(resp); ok {
		return r.Path
	}
	return -1
}

// baseline is quic-go's http3.Transport with its sockets on the first
// path's address: a single-path client, as an app gets without PCM.
func (b *Bench) baseline(base string) requester {
	var mu sync.Mutex
	var trs []*quic.Transport
	addr := b.relay.PathAddrs()[0]
	tlsConf := b.roots.Clone()
	tlsConf.ServerName = "localhost"
	h3 := &http3.Transport{TLSClientConfig: tlsConf,
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
			if err != nil {
				return nil, err
			}
			tr := &quic.Transport{Conn: udp}
			mu.Lock()
			trs = append(trs, tr)
			mu.Unlock()
			return tr.Dial(ctx, net.UDPAddrFromAddrPort(b.relay.Addr()), tlsCfg, cfg)
		}}
	return &httpReq{rt: h3, base: base, pathOf: func(*http.Response) int { return 0 }, done: func() {
		h3.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, tr := range trs {
			tr.Close()
			tr.Conn.Close()
		}
	}}
}

// Generated setups' round-trip range: a LAN-like 10 ms to a distant LTE
// cell's 150 ms, log-uniform, in random order (the best path is not
// always the first configured).
const genMinRTT, genMaxRTT = 10.0, 150.0

// GenerateCutSetups draws n three-path setups (each path's RTT in ms) from
// seed: setups that no test fixes, for the share on the best live path.
func GenerateCutSetups(seed uint64, n int) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0x63757473))
	setups := make([][]float64, n)
	for i := range setups {
		for range 3 {
			rtt := genMinRTT * math.Pow(genMaxRTT/genMinRTT, rng.Float64())
			setups[i] = append(setups[i], math.Round(rtt))
		}
	}
	return setups
}
