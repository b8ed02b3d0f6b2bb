package ops

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// WriteStatus writes "hetquic agent status": a summary of a ct-client's
// paths or a ct-server's clients, read from the Prometheus text of their
// metrics endpoint (both sides' /metrics): paths up, RTT, streams, bytes,
// stalls and reconnects; clients' connections, work and bytes; the limits
// that bit. metrics is parsed by Prometheus' own text parser.
func WriteStatus(w io.Writer, metrics io.Reader) error {
	ss, err := ReadMetrics(metrics)
	if err != nil {
		return err
	}
	switch {
	case ss["ct_client_path_up"] != nil:
		ss.client(w)
	case ss["ct_server_reserved_bytes"] != nil:
		ss.server(w)
	default:
		return fmt.Errorf("metrics: neither ct-client's nor ct-server's (no ct_client_path_up or ct_server_reserved_bytes)")
	}
	return nil
}

// ReadMetrics parses the Prometheus text of a metrics endpoint (by
// Prometheus' own parser) into each metric's samples: gauges, counters
// and untyped values; histograms and summaries are left out.
func ReadMetrics(metrics io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(metrics)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ss := Metrics{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			s := statusSample{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				s.v = m.GetGauge().GetValue()
			case m.Counter != nil:
				s.v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				s.v = m.GetUntyped().GetValue()
			default:
				continue
			}
			ss[name] = append(ss[name], s)
		}
	}
	return ss, nil
}

type statusSample struct {
	labels map[string]string
	v      float64
}

// Metrics maps a metric's name to its samples (ReadMetrics).
type Metrics map[string][]statusSample

// By returns name's value per value of label key, and those values sorted.
func (ss Metrics) By(name, key string) (map[string]float64, []string) {
	m := map[string]float64{}
	var keys []string
	for _, s := range ss[name] {
		k := s.labels[key]
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
		m[k] += s.v
	}
	slices.Sort(keys)
	return m, keys
}

// Total is the sum of name's samples.
func (ss Metrics) Total(name string) float64 {
	var t float64
	for _, s := range ss[name] {
		t += s.v
	}
	return t
}

func (ss Metrics) client(w io.Writer) {
	up, names := ss.By("ct_client_path_up", "path")
	fmt.Fprintf(w, "ct-client: %.0f of %d paths up; migrations %.0f, aborts %.0f, limit retries %.0f, striped %.0f\n",
		ss.Total("ct_client_path_up"), len(names), ss.Total("ct_client_migrations_total"), ss.Total("ct_client_aborts_total"),
		ss.Total("ct_client_limit_retries_total"), ss.Total("ct_client_striped_total"))
	ss.table(w, "path", "ct_client_path_up", []statusColumn{
		{"srtt", "ct_client_path_srtt_seconds"}, {"streams", "ct_client_path_streams"}, {"tunnels", "ct_client_path_tunnels"},
		{"requests", "ct_client_path_requests_total"}, {"received", "ct_client_path_received_bytes_total"},
		{"stalls", "ct_client_path_stalls_total"}, {"reconnects", "ct_client_path_reconnects_total"}, {"dial failures", "ct_client_path_dial_failures_total"},
	}, func(p string) []string { return []string{map[bool]string{true: "up", false: "down"}[up[p] > 0]} }, "up")
}

// statusColumn is a column of a status table: its head and its metric.
type statusColumn struct{ head, metric string }

// table writes one row per value of label (the values of keyMetric's
// samples): the value, lead's cells (under leadHeads), then cols.
func (ss Metrics) table(w io.Writer, label, keyMetric string, cols []statusColumn, lead func(string) []string, leadHeads ...string) {
	_, keys := ss.By(keyMetric, label)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := append([]string{label}, leadHeads...)
	vals := make([]map[string]float64, len(cols))
	for i, c := range cols {
		head = append(head, c.head)
		vals[i], _ = ss.By(c.metric, label)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, k := range keys {
		row := append([]string{k}, lead(k)...)
		for i, c := range cols {
			row = append(row, statusCell(c.metric, vals[i][k]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

func (ss Metrics) server(w io.Writer) {
	fmt.Fprintf(w, "ct-server: reserved %s, %.0f connections before hello; %.0f connections, %.0f unauthorized, %.0f forbidden, %.0f bad requests since start\n",
		statusBytes(ss.Total("ct_server_reserved_bytes")), ss.Total("ct_server_preauth_connections"), ss.Total("ct_server_connections_total"),
		ss.Total("ct_server_unauthorized_total"), ss.Total("ct_server_forbidden_total"), ss.Total("ct_server_bad_requests_total"))
	ss.table(w, "client", "ct_server_client_connections", []statusColumn{
		{"connections", "ct_server_client_connections"}, {"streams", "ct_server_client_streams"}, {"tunnels", "ct_server_client_tunnels"},
		{"reserved", "ct_server_client_buffer_bytes"}, {"requests", "ct_server_client_requests_total"},
		{"denied", "ct_server_client_denied_total"}, {"sent", "ct_server_client_sent_bytes_total"},
	}, func(string) []string { return nil })
	hits, limits := ss.By("ct_server_limit_hits_total", "limit")
	var parts []string
	for _, l := range limits {
		if hits[l] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", l, hits[l]))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(w, "limits hit: %s\n", strings.Join(parts, ", "))
}

// statusCell formats a value by its metric's unit.
func statusCell(metric string, v float64) string {
	switch {
	case strings.HasSuffix(metric, "_seconds"):
		return time.Duration(v * float64(time.Second)).Round(100 * time.Microsecond).String()
	case strings.Contains(metric, "bytes"):
		return statusBytes(v)
	}
	return fmt.Sprintf("%.0f", v)
}

// statusBytes is v bytes in B, kB, MB or GB (SI, as curl and ls -h --si).
func statusBytes(v float64) string {
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if v >= u.div {
			return fmt.Sprintf("%.1f %s", v/u.div, u.unit)
		}
	}
	return fmt.Sprintf("%.0f B", v)
}
