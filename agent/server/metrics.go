package server

import (
	"io"

	"github.com/hetquic/hetquic/agent/ops"
	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are ct-server's registry, refusal counters and histograms.
type serverMetrics struct {
	reg       *prometheus.Registry
	limitHits *prometheus.CounterVec
	duration  *prometheus.HistogramVec
}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{reg: prometheus.NewRegistry(),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ct_server_limit_hits_total",
			Help: "Work refused or cut by a limit: per-client (streams, tunnels, conns, prefetch, buffer_bytes, bytes), server-wide (memory_budget, preauth_total, preauth_source, login_backoff)."},
			[]string{"limit"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ct_server_stream_duration_seconds",
			Help: "Admitted streams: request head to the end of the response, tunnel or push, by kind.", Buckets: ops.LatencyBuckets},
			[]string{"kind"})}
	for _, l := range []string{limStreams, limTunnels, limConns, limPrefetch, limBuffer, limBytes, limMemory, limPreAuthTotal, limPreAuthSource, limLoginBackoff} {
		m.limitHits.WithLabelValues(l) // every limit shows, at 0 until it bites
	}
	m.reg.MustRegister(m.limitHits, m.duration, ops.Collector(s.collect))
	return m
}

// Registry is ct-server's Prometheus registry (for ops.MetricsHandler).
func (s *Server) Registry() prometheus.Gatherer { return s.m.reg }

// WriteMetrics writes ct-server's metrics in Prometheus text format.
func (s *Server) WriteMetrics(w io.Writer) { ops.WriteText(w, s.m.reg) }

// collect emits ct-server's per-client gauges and counters.
func (s *Server) collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	preauth := s.preauth
	s.mu.Unlock()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, cs := range s.pol.Load().clients {
		cs.mu.Lock()
		for _, m := range []struct {
			name, help string
			typ        prometheus.ValueType
			v          float64
		}{
			{"ct_server_client_connections", "Authenticated connections of the client.", gauge, float64(cs.conns)},
			{"ct_server_client_streams", "Requests and prefetch hints in progress.", gauge, float64(cs.streams)},
			{"ct_server_client_tunnels", "CONNECT tunnels open (attached or awaiting a resume).", gauge, float64(cs.tunnels)},
			{"ct_server_client_buffer_bytes", "Memory reserved by the client's work.", gauge, float64(cs.buffered)},
			{"ct_server_client_requests_total", "Requests, hints and tunnels accepted.", counter, float64(cs.requests)},
			{"ct_server_client_denied_total", "Work refused by a per-client limit.", counter, float64(cs.denied)},
			{"ct_server_client_sent_bytes_total", "Response, tunnel and push bytes sent.", counter, float64(cs.sent)},
		} {
			ops.Emit(ch, m.name, m.help, m.typ, m.v, "client", cs.id)
		}
		cs.mu.Unlock()
	}
	ops.Emit(ch, "ct_server_preauth_connections", "Connections that have not said hello yet.", gauge, float64(preauth))
	ops.Emit(ch, "ct_server_reserved_bytes", "Memory reserved by all clients' work (against the memory budget).", gauge, float64(s.reserved.Load()))
	for _, m := range []struct {
		name, help string
		v          int64
	}{
		{"ct_server_connections_total", "QUIC connections accepted.", s.conns0.Load()},
		{"ct_server_unauthorized_total", "Connections closed for a missing or unknown token.", s.unauthorized.Load()},
		{"ct_server_bad_requests_total", "Streams with a malformed or unsupported request.", s.badRequests.Load()},
		{"ct_server_forbidden_total", "Requests for an upstream not in the allow-list.", s.forbidden.Load()},
	} {
		ops.Emit(ch, m.name, m.help, counter, float64(m.v))
	}
}
