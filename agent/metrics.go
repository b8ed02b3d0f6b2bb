package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hetquic/hetquic/agent/ops"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/wire"
)

// Metrics go through the Prometheus client library: each Client and Server
// has its own registry (no global state, so tests can run several), with
// collectors that read the live counters at scrape time and histograms of
// request latency.

// clientMetrics are ct-client's registry and histograms.
type clientMetrics struct {
	reg      *prometheus.Registry
	duration prometheus.Histogram
}

func newClientMetrics(c *Client) *clientMetrics {
	m := &clientMetrics{reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ct_client_request_duration_seconds",
			Help: "App requests: time from the request head to the response's last byte.", Buckets: ops.LatencyBuckets})}
	m.reg.MustRegister(m.duration, ops.Collector(c.collect))
	return m
}

// Registry is ct-client's Prometheus registry (for ops.MetricsHandler).
func (c *Client) Registry() prometheus.Gatherer { return c.m.reg }

// WriteMetrics writes ct-client's metrics in Prometheus text format.
func (c *Client) WriteMetrics(w io.Writer) { ops.WriteText(w, c.m.reg) }

// collect emits ct-client's counters: per path, per app, and for stream
// migration and the prefetch cache.
func (c *Client) collect(ch chan<- prometheus.Metric) {
	type pm struct {
		name string
		typ  prometheus.ValueType
		help string
		val  func(p *path) float64
	}
	now := time.Now()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	pathMetrics := []pm{
		{"ct_client_path_up", gauge, "1 when the path's QUIC connection to ct-server is up.", func(p *path) float64 {
			if p.current() != nil {
				return 1
			}
			return 0
		}},
		{"ct_client_path_suspect", gauge, "1 while a stalled path gets no new requests.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			if now.Before(p.suspectUntil) {
				return 1
			}
			return 0
		}},
		{"ct_client_path_srtt_seconds", gauge, "Smoothed RTT of the path's connection.", func(p *path) float64 {
			if conn := p.current(); conn != nil {
				return conn.ConnectionStats().SmoothedRTT.Seconds()
			}
			return 0
		}},
		{"ct_client_path_streams", gauge, "Requests in progress on the path.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			return float64(p.streams)
		}},
		{"ct_client_path_outstanding_bytes", gauge, "Response bytes still expected on the path.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			return float64(p.outstanding)
		}},
		{"ct_client_path_tunnels", gauge, "CONNECT tunnels attached to the path.", func(p *path) float64 { return float64(p.tunnels.Load()) }},
		{"ct_client_path_requests_total", counter, "Streams opened for app requests on the path.", func(p *path) float64 { return float64(p.requests.Load()) }},
		{"ct_client_path_received_bytes_total", counter, "Response bytes received on the path.", func(p *path) float64 { return float64(p.bytes.Load()) }},
		{"ct_client_path_stalls_total", counter, "Stalls detected on the path.", func(p *path) float64 { return float64(p.stalls.Load()) }},
		{"ct_client_path_reconnects_total", counter, "Connections of the path lost and redialled.", func(p *path) float64 { return float64(p.reconnects.Load()) }},
		{"ct_client_path_dial_failures_total", counter, "Failed dials of the path.", func(p *path) float64 { return float64(p.dialFailures.Load()) }},
	}
	for _, m := range pathMetrics {
		for _, p := range c.activePaths() {
			ops.Emit(ch, m.name, m.help, m.typ, m.val(p), "path", p.Name)
		}
	}
	c.mu.Lock()
	names := make([]string, 0, len(c.apps))
	for n := range c.apps {
		names = append(names, n)
	}
	apps := make([]*appStats, 0, len(names))
	sort.Strings(names)
	for _, n := range names {
		apps = append(apps, c.apps[n])
	}
	c.mu.Unlock()
	for _, m := range []struct {
		name, help string
		val        func(*appStats) int64
	}{
		{"ct_client_app_requests_total", "App requests and tunnels.", func(a *appStats) int64 { return a.requests.Load() }},
		{"ct_client_app_bytes_total", "Response bytes delivered to the app.", func(a *appStats) int64 { return a.bytes.Load() }},
		{"ct_client_app_failures_total", "App requests that failed.", func(a *appStats) int64 { return a.failures.Load() }},
	} {
		for i, n := range names {
			ops.Emit(ch, m.name, m.help, counter, float64(m.val(apps[i])), "app", n)
		}
	}
	ops.Emit(ch, "ct_client_migrations_total", "Streams moved to another path mid-request.", counter, float64(c.migrations.Load()))
	ch <- prometheus.MustNewConstSummary(prometheus.NewDesc("ct_client_stall_detect_seconds", "Time from a stream's last byte to the stall decision.", nil, nil),
		uint64(c.stallDetections.Load()), time.Duration(c.stallDetectNanos.Load()).Seconds(), nil)
	ops.Emit(ch, "ct_client_last_resume_gap_seconds", "Last migration: last byte on the old path to response head on the new one.", gauge, time.Duration(c.resumeNanos.Load()).Seconds())
	ops.Emit(ch, "ct_client_striped_total", "Responses fetched over several paths in Range pieces.", counter, float64(c.stripes.Load()))
	ops.Emit(ch, "ct_client_limit_retries_total", "Requests and pieces retried after ct-server's limits refused them (429 or 503 with Retry-After).", counter, float64(c.limitRetries.Load()))
	ops.Emit(ch, "ct_client_stripe_fallbacks_total", "Striped responses finished on one stream after pieces were refused.", counter, float64(c.stripeFallbacks.Load()))
	ops.Emit(ch, "ct_client_upload_replays_total", "Requests with a body sent again from their first byte after their path failed mid-body.", counter, float64(c.uploadReplays.Load()))
	ops.Emit(ch, "ct_client_stripe_reinjections_total", "Striped pieces that held the app up, requested again on a faster path.", counter, float64(c.reinjections.Load()))
	ops.Emit(ch, "ct_client_stripe_endgame_copies_total", "Striped pieces of a slower path copied to an idle path once every byte was requested, where the copy would land sooner (not reinjections: no fault needed).", counter, float64(c.endgameCopies.Load()))
	ops.Emit(ch, "ct_client_stripe_endgame_copy_bytes_total", "Bytes of the striped pieces counted in ct_client_stripe_endgame_copies_total.", counter, float64(c.endgameCopyBytes.Load()))
	ops.Emit(ch, "ct_client_stripe_takeovers_total", "Striped responses whose original stream's path failed before its cut; the stripe's pieces fetched the rest (migrations with no resume gap).", counter, float64(c.takeOvers.Load()))
	ops.Emit(ch, "ct_client_stripe_blocked_total", "Striped pieces of a slower path that landed late while the app waited and the window stopped the fastest path (each raises that stripe's λ).", counter, float64(c.stripeBlocks.Load()))
	ops.Emit(ch, "ct_client_tunnels_reclaimed_total", "Idle tunnels closed for a waiting app while every tunnel slot was taken (oldest idle first).", counter, float64(c.gate.Reclaimed()))
	ops.Emit(ch, "ct_client_aborts_total", "App connections reset because a response or tunnel could not be completed.", counter, float64(c.aborts.Load()))
	var hits int64
	if c.cache != nil {
		hits = c.cache.Hits()
	}
	ops.Emit(ch, "ct_client_cache_hits_total", "Requests answered from the prefetch cache.", counter, float64(hits))
	ops.Emit(ch, "ct_client_pushes_total", "Responses pushed by ct-server into the cache.", counter, float64(c.pushed.Load()))
	if c.cache != nil {
		ops.Emit(ch, "ct_client_cache_bytes", "Body bytes in the prefetch cache.", gauge, float64(c.cache.Size()))
	}
}

// Prefetch asks ct-server to fetch rawURL and push it into the cache (a
// hint, Cybertwin §V-B1). It returns once ct-server accepted the hint.
func (c *Client) Prefetch(ctx context.Context, rawURL string) error {
	if c.cache == nil {
		return fmt.Errorf("prefetch: ct-client has no cache")
	}
	if _, err := wire.UpstreamOf(rawURL); err != nil {
		return fmt.Errorf("prefetch %q: %w", rawURL, err)
	}
	_, conn, err := c.pick(ctx, pathchoice.Request{App: "prefetch", Priority: 1}, nil)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	defer str.CancelRead(wire.CodeOK)
	str.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(str, "GET %s?url=%s HTTP/1.1\r\nHost: ct\r\n\r\n", wire.PathPrefetch, url.QueryEscape(rawURL)); err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	str.Close()
	resp, err := wire.NewHeadReader(str).ReadResponse(nil)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("prefetch %s: ct-server says %d %s", rawURL, resp.StatusCode, resp.Header.Get(wire.HdrError))
	}
	return nil
}
