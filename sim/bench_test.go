package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/cputime"
)

// benchTransfer is the ns-3 comparison: a 10 MB NewReno transfer
// over n links of 10 Mbit/s, 20 ms one-way delay and a 100-packet drop-tail
// queue (minRTT scheduler for two links). It reports wall time per simulated
// transfer (ns/op), simulator events per wall second, and the process's CPU
// time per transfer (on a shared machine the steadier of the two).
func benchTransfer(b *testing.B, n int) {
	var events uint64
	var simTime time.Duration
	b.ReportAllocs()
	cpu := cputime.Process()
	for i := 0; i < b.N; i++ {
		fct, s, _ := transfer(b, uint64(i+1), n, 10_000_000, ConnConfig{CC: "newreno", Scheduler: "minrtt"}, 0)
		events += s.Events()
		simTime += fct
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(simTime.Seconds()/float64(b.N), "sim-s/op")
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
}

func BenchmarkTransfer10MBOneLink(b *testing.B)  { benchTransfer(b, 1) }
func BenchmarkTransfer10MBTwoLinks(b *testing.B) { benchTransfer(b, 2) }

// BenchmarkPaths checks "linear cost up to 64 paths": one minRTT
// connection over n paths of 10 Mbit/s and 20 ms each, carrying 1 MB per
// path (so every n simulates about the same time and n× the packets). The
// sender fills the scheduler's view of every path for each packet, and the
// schedulers scan it, so the cost per event is a + b·n: linear in the paths,
// which is what cpu-ns/event across n shows.
func BenchmarkPaths(b *testing.B) {
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var events uint64
			cpu := cputime.Process()
			for i := 0; i < b.N; i++ {
				_, s, _ := transfer(b, uint64(i+1), n, int64(n)*1_000_000, ConnConfig{CC: "newreno", Scheduler: "minrtt"}, 0)
				events += s.Events()
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(events), "cpu-ns/event")
		})
	}
}
