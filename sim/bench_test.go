package sim

import (
	"testing"
	"time"
)

// benchTransfer is the ns-3 comparison of issue 6: a 10 MB NewReno transfer
// over n links of 10 Mbit/s, 20 ms one-way delay and a 100-packet drop-tail
// queue (minRTT scheduler for two links). It reports wall time per simulated
// transfer (ns/op) and simulator events per wall second.
func benchTransfer(b *testing.B, n int) {
	var events uint64
	var simTime time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fct, s, _ := transfer(b, uint64(i+1), n, 10_000_000, ConnConfig{CC: "newreno", Scheduler: "minrtt"}, 0)
		events += s.Events()
		simTime += fct
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(simTime.Seconds()/float64(b.N), "sim-s/op")
}

func BenchmarkTransfer10MBOneLink(b *testing.B)  { benchTransfer(b, 1) }
func BenchmarkTransfer10MBTwoLinks(b *testing.B) { benchTransfer(b, 2) }
