package capacity

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/stats"
)

// newGaps draws device i's gaps between requests: exponential with mean
// mean (requests at random, as a device's apps make them), seeded by seed
// and i so that a run is repeatable.
func newGaps(seed uint64, i int, mean time.Duration) func() time.Duration {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	return func() time.Duration { return time.Duration(r.ExpFloat64() * float64(mean)) }
}

// quantile is the type-7 quantile q of ds (0 when empty).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	v := stats.Quantiles(stats.FloatsMs(ds), q)[0]
	if math.IsNaN(v) {
		return 0
	}
	return stats.DurationMs(v)
}

// Markdown writes the report as BENCHMARKS.md's table. The date, the
// command and the load are the measured block's own line (hetquic docs
// --measured).
func (r *Report) Markdown(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "Loopback, ct-server under its default configuration; each device a ct-client with two paths "+
		"(two QUIC connections, keep-alive every %v) from addresses of its own, dialling %d devices at a time, idle %v, "+
		"then fetching %d kB objects every %v on average (exponential gaps) for %v. The devices and their apps run in "+
		"the measuring process on the same cores: the first byte is the whole lab's.\n\n",
		keepAlive, c.Wave, c.Idle, c.Bytes>>10, c.Interval, c.Active)
	fmt.Fprintf(w, "| devices | ct-server RSS idle (before any) | per device | handshakes/s | ct-server CPU idle | paths up | requests (failed) | first byte p50 / p99 | ct-server peak RSS | CPU per request: ct-server / devices + apps |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(w, "| %d | %d MiB (%d MiB) | %d KiB | %.0f | %.1f %% | %d of %d | %d (%d) | %.1f / %.1f ms | %d MiB | %.2f / %.2f ms |\n",
			x.Devices, x.IdleRSS>>20, x.BaseRSS>>20, x.PerDevice()>>10, x.HandshakesPerSec(),
			100*x.IdleCPU.Seconds()/c.Idle.Seconds(), x.PathsUp, 2*x.Devices, x.Requests, x.Failed,
			stats.Ms(x.P50), stats.Ms(x.P99), x.PeakRSS>>20, perRequest(x.ActiveCPU, x.Requests), perRequest(x.LabCPU, x.Requests))
	}
	for _, x := range r.Rows {
		if cpu := perRequest(x.ActiveCPU+x.LabCPU, x.Requests); cpu > 0 && x.ActiveCPU > 0 {
			fmt.Fprintf(w, "\n%d devices: at %.2f ms of CPU per request (ct-server and lab), two cores carry at most %.0f requests a second "+
				"through this lab, %.0f offered (%.0f per core through ct-server alone).", x.Devices, cpu, 2000/cpu,
				float64(x.Devices)/c.Interval.Seconds(), 1000/perRequest(x.ActiveCPU, x.Requests))
		}
	}
	fmt.Fprintf(w, "\n\nGoal (issue): %d idle devices ≤ %d MiB RSS, p99 first byte ≤ %v on two cores. %s\n",
		GoalDevices, GoalRSS>>20, GoalP99, r.verdict())
}

// perRequest is cpu in milliseconds per completed request (0 for none).
func perRequest(cpu time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return stats.Ms(cpu) / float64(n)
}

// keepAlive is the ct-client's keep-alive period under the default idle
// timeout (wire.QUICConfig sends one every quarter of it).
const keepAlive = wire.DefaultIdleTimeout / 4

// verdict says whether the row of GoalDevices devices met the goals, or
// that the run had no such row.
func (r *Report) verdict() string {
	for _, x := range r.Rows {
		if x.Devices != GoalDevices {
			continue
		}
		var broken []string
		if x.IdleRSS > GoalRSS {
			broken = append(broken, fmt.Sprintf("idle RSS %d MiB", x.IdleRSS>>20))
		}
		if x.P99 > GoalP99 {
			broken = append(broken, fmt.Sprintf("p99 %.1f ms", stats.Ms(x.P99)))
		}
		if x.Failed > 0 || x.PathsUp < 2*x.Devices {
			broken = append(broken, fmt.Sprintf("%d failed requests, %d of %d paths up", x.Failed, x.PathsUp, 2*x.Devices))
		}
		if len(broken) == 0 {
			return "Met."
		}
		return "**Not met: " + strings.Join(broken, "; ") + ".**"
	}
	return fmt.Sprintf("No row of %d devices in this run.", GoalDevices)
}
