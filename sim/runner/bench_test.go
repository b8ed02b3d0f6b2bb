package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hetquic/hetquic/internal/cputime"
)

// BenchmarkAbilene1000Flows is the "1000 concurrent flows on an
// Abilene-size topology" target: 1000 bulk flows of 100 kB between random node
// pairs of builtin:abilene (11 nodes, 14 links of 100 Mbit/s), all started
// within the first second, each over its shortest path (scheme quic) or over
// Yen's three shortest with minRTT (lrf). It reports the events of a run and
// the wall and CPU time per event; every flow must complete.
func BenchmarkAbilene1000Flows(b *testing.B) {
	for _, scheme := range []string{"quic", "lrf"} {
		b.Run(scheme, func(b *testing.B) {
			file := filepath.Join(b.TempDir(), "flows.yaml")
			spec := "name: abilene-1000\ntopology: builtin:abilene\nduration_s: 120\nseeds: 1\napp: {kind: bulk, size_mb: 0.1}\n" +
				"flows: {count: 1000, interval_s: 0.001, bw_mbps: 0.1, k: 3}\nvariants: [{scheme: " + scheme + "}]\n"
			if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
				b.Fatal(err)
			}
			s, err := Load(file)
			if err != nil {
				b.Fatal(err)
			}
			var events uint64
			cpu := cputime.Process()
			for i := 0; i < b.N; i++ {
				r, err := s.RunOne(context.Background(), 0, 0, uint64(i+1))
				if err != nil {
					b.Fatal(err)
				}
				if !r.Completed || len(r.Flows) != 1000 {
					b.Fatalf("%d flows, completed %v by %.1f s", len(r.Flows), r.Completed, r.EndS)
				}
				events += r.Events
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(events), "cpu-ns/event")
		})
	}
}
