package ops

import (
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Collector turns a function that emits const metrics into a
// prometheus.Collector (unchecked: it describes nothing up front).
type Collector func(ch chan<- prometheus.Metric)

func (Collector) Describe(chan<- *prometheus.Desc)      {}
func (f Collector) Collect(ch chan<- prometheus.Metric) { f(ch) }

// Emit sends one sample of a metric described on the fly.
func Emit(ch chan<- prometheus.Metric, name, help string, typ prometheus.ValueType, v float64, labels ...string) {
	var keys, vals []string
	for i := 0; i+1 < len(labels); i += 2 {
		keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, keys, nil), typ, v, vals...)
}

// LatencyBuckets (seconds) span a cached hit on loopback to a large
// download on a slow path.
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// WriteText writes what g gathers in Prometheus text format.
func WriteText(w io.Writer, g prometheus.Gatherer) {
	mfs, err := g.Gather()
	if err != nil {
		fmt.Fprintf(w, "# gather: %v\n", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		enc.Encode(mf)
	}
}

// MetricsHandler serves g on GET /metrics and health on GET /healthz (200
// "ok", or 503 and the reason while health returns an error).
func MetricsHandler(g prometheus.Gatherer, health func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	return mux
}
