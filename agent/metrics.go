package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Prometheus text exposition (format 0.0.4), written by hand: a handful of
// counters does not justify a dependency.

func metricHeader(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// num formats a sample value without an exponent.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// labelValue escapes a label value (backslash, quote, newline).
func labelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// WriteMetrics writes ct-client's counters: per path, per app, and for
// stream migration and the prefetch cache.
func (c *Client) WriteMetrics(w io.Writer) {
	type pm struct {
		name string
		typ  string
		help string
		val  func(p *path) float64
	}
	now := time.Now()
	pathMetrics := []pm{
		{"ct_client_path_up", "gauge", "1 when the path's QUIC connection to ct-server is up.", func(p *path) float64 {
			if p.current() != nil {
				return 1
			}
			return 0
		}},
		{"ct_client_path_suspect", "gauge", "1 while a stalled path gets no new requests.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			if now.Before(p.suspectUntil) {
				return 1
			}
			return 0
		}},
		{"ct_client_path_srtt_seconds", "gauge", "Smoothed RTT of the path's connection.", func(p *path) float64 {
			if conn := p.current(); conn != nil {
				return conn.ConnectionStats().SmoothedRTT.Seconds()
			}
			return 0
		}},
		{"ct_client_path_streams", "gauge", "Requests in progress on the path.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			return float64(p.streams)
		}},
		{"ct_client_path_outstanding_bytes", "gauge", "Response bytes still expected on the path.", func(p *path) float64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			return float64(p.outstanding)
		}},
		{"ct_client_path_tunnels", "gauge", "CONNECT tunnels attached to the path.", func(p *path) float64 { return float64(p.tunnels.Load()) }},
		{"ct_client_path_requests_total", "counter", "Streams opened for app requests on the path.", func(p *path) float64 { return float64(p.requests.Load()) }},
		{"ct_client_path_received_bytes_total", "counter", "Response bytes received on the path.", func(p *path) float64 { return float64(p.bytes.Load()) }},
		{"ct_client_path_stalls_total", "counter", "Stalls detected on the path.", func(p *path) float64 { return float64(p.stalls.Load()) }},
		{"ct_client_path_reconnects_total", "counter", "Connections of the path lost and redialled.", func(p *path) float64 { return float64(p.reconnects.Load()) }},
		{"ct_client_path_dial_failures_total", "counter", "Failed dials of the path.", func(p *path) float64 { return float64(p.dialFailures.Load()) }},
	}
	for _, m := range pathMetrics {
		metricHeader(w, m.name, m.typ, m.help)
		for _, p := range c.paths {
			fmt.Fprintf(w, "%s{path=\"%s\"} %s\n", m.name, labelValue(p.Name), num(m.val(p)))
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
		metricHeader(w, m.name, "counter", m.help)
		for i, n := range names {
			fmt.Fprintf(w, "%s{app=\"%s\"} %d\n", m.name, labelValue(n), m.val(apps[i]))
		}
	}
	metricHeader(w, "ct_client_migrations_total", "counter", "Streams moved to another path mid-request.")
	fmt.Fprintf(w, "ct_client_migrations_total %d\n", c.migrations.Load())
	metricHeader(w, "ct_client_stall_detect_seconds", "summary", "Time from a stream's last byte to the stall decision.")
	fmt.Fprintf(w, "ct_client_stall_detect_seconds_sum %g\nct_client_stall_detect_seconds_count %d\n",
		time.Duration(c.stallDetectNanos.Load()).Seconds(), c.stallDetections.Load())
	metricHeader(w, "ct_client_last_resume_gap_seconds", "gauge", "Last migration: last byte on the old path to response head on the new one.")
	fmt.Fprintf(w, "ct_client_last_resume_gap_seconds %g\n", time.Duration(c.resumeNanos.Load()).Seconds())
	metricHeader(w, "ct_client_striped_total", "counter", "Responses fetched over several paths in Range pieces.")
	fmt.Fprintf(w, "ct_client_striped_total %d\n", c.stripes.Load())
	var hits int64
	if c.cache != nil {
		hits = c.cache.hits.Load()
	}
	metricHeader(w, "ct_client_cache_hits_total", "counter", "Requests answered from the prefetch cache.")
	fmt.Fprintf(w, "ct_client_cache_hits_total %d\n", hits)
	metricHeader(w, "ct_client_pushes_total", "counter", "Responses pushed by ct-server into the cache.")
	fmt.Fprintf(w, "ct_client_pushes_total %d\n", c.pushed.Load())
	if c.cache != nil {
		metricHeader(w, "ct_client_cache_bytes", "gauge", "Body bytes in the prefetch cache.")
		fmt.Fprintf(w, "ct_client_cache_bytes %d\n", c.cache.Size())
	}
}

// WriteMetrics writes ct-server's counters, per client.
func (s *Server) WriteMetrics(w io.Writer) {
	s.mu.Lock()
	conns := map[string]int{}
	for _, cs := range s.conns {
		if cs != nil {
			conns[cs.id]++
		}
	}
	s.mu.Unlock()
	type row struct {
		id                     string
		conns, streams         int
		requests, denied, sent int64
	}
	var rows []row
	for _, cs := range s.clients {
		cs.mu.Lock()
		rows = append(rows, row{cs.id, conns[cs.id], cs.streams, cs.requests, cs.denied, cs.sent})
		cs.mu.Unlock()
	}
	for _, m := range []struct {
		name, typ, help string
		val             func(row) float64
	}{
		{"ct_server_client_connections", "gauge", "Authenticated connections of the client.", func(r row) float64 { return float64(r.conns) }},
		{"ct_server_client_streams", "gauge", "Requests and tunnels in progress.", func(r row) float64 { return float64(r.streams) }},
		{"ct_server_client_requests_total", "counter", "Requests and tunnels accepted.", func(r row) float64 { return float64(r.requests) }},
		{"ct_server_client_denied_total", "counter", "Requests refused by a per-client limit.", func(r row) float64 { return float64(r.denied) }},
		{"ct_server_client_sent_bytes_total", "counter", "Response, tunnel and push bytes sent.", func(r row) float64 { return float64(r.sent) }},
	} {
		metricHeader(w, m.name, m.typ, m.help)
		for _, r := range rows {
			fmt.Fprintf(w, "%s{client=\"%s\"} %s\n", m.name, labelValue(r.id), num(m.val(r)))
		}
	}
	for _, m := range []struct {
		name, help string
		v          int64
	}{
		{"ct_server_connections_total", "QUIC connections accepted.", s.conns0.Load()},
		{"ct_server_unauthorized_total", "Connections closed for a missing or unknown token.", s.unauthorized.Load()},
		{"ct_server_bad_requests_total", "Streams with a malformed or unsupported request.", s.badRequests.Load()},
		{"ct_server_forbidden_total", "Requests for an upstream not in the allow-list.", s.forbidden.Load()},
	} {
		metricHeader(w, m.name, "counter", m.help)
		fmt.Fprintf(w, "%s %d\n", m.name, m.v)
	}
}

// MetricsHandler serves write on GET /metrics.
func MetricsHandler(write func(io.Writer)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		write(w)
	})
	return mux
}

// Prefetch asks ct-server to fetch rawURL and push it into the cache (a
// hint, Cybertwin §V-B1). It returns once ct-server accepted the hint.
func (c *Client) Prefetch(ctx context.Context, rawURL string) error {
	if c.cache == nil {
		return fmt.Errorf("prefetch: ct-client has no cache")
	}
	if _, err := upstreamOf(rawURL); err != nil {
		return fmt.Errorf("prefetch %q: %w", rawURL, err)
	}
	_, conn, err := c.pick(ctx, Request{App: "prefetch", Priority: 1}, nil)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	defer str.CancelRead(codeOK)
	str.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(str, "GET %s?url=%s HTTP/1.1\r\nHost: ct\r\n\r\n", pathPrefetch, url.QueryEscape(rawURL)); err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	str.Close()
	resp, err := newHeadReader(str).readResponse(nil)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("prefetch %s: ct-server says %d %s", rawURL, resp.StatusCode, resp.Header.Get(hdrError))
	}
	return nil
}
