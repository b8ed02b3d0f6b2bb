package agent

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/server"
)

// linkSpec is one path's downlink in the comparison: rate in bytes/s and
// one-way delay, applied to what the path's socket receives.
type linkSpec struct {
	rate  float64
	delay time.Duration
}

type workItem struct {
	app  string
	size int64
	at   time.Duration // start, from the run's start
}

type compareResult struct {
	makespan  time.Duration // all requests done
	bigMean   time.Duration // mean completion of requests >= 500 kB
	smallMean time.Duration // mean completion of the rest
	bytes     int64
}

// runWorkload runs items through a fresh agent pair whose paths are shaped
// as links say, with the named scheduler.
func runWorkload(t testing.TB, sched string, links []linkSpec, items []workItem) compareResult {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *server.Config) { c.Log = nil }, up.hostport)
	byIP := map[string]linkSpec{}
	paths := loopbackPaths(len(links))
	for i, l := range links {
		byIP[paths[i].Addr.String()] = l
	}
	name, nostripe := strings.CutSuffix(sched, "/nostripe")
	tc := startClient(t, ts, len(links), true, func(c *ClientConfig) {
		c.Log = nil
		c.Scheduler, _ = pathchoice.NewScheduler(name, len(links), 1)
		if nostripe {
			c.StripeMin = -1
		}
		c.AppRule = AppRule{Kind: "header", Header: "X-App"}
		c.ListenPacket = shapedListen(func(ip net.IP) linkSpec { return byIP[ip.String()] })
	})
	// Warm-up: a few small requests teach RTTs (and the learned policy).
	for range 2 * len(links) {
		tc.get(t, up.URL+"/bytes/20000")
	}
	var mu sync.Mutex
	var big, small []time.Duration
	var res compareResult
	var wg sync.WaitGroup
	start := time.Now()
	for _, it := range items {
		wg.Go(func() {
			time.Sleep(it.at)
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/bytes/%d", up.URL, it.size), nil)
			req.Header.Set("X-App", it.app)
			resp, err := tc.hc.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != it.size {
				t.Errorf("%s: %d of %d bytes: %v", it.app, n, it.size, err)
			}
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			res.bytes += n
			if it.size >= 500_000 {
				big = append(big, d)
			} else {
				small = append(small, d)
			}
		})
	}
	wg.Wait()
	res.makespan = time.Since(start)
	res.bigMean, res.smallMean = mean(big), mean(small)
	return res
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

// compareScenarios are the workloads the scheduler comparison runs.
var compareScenarios = []struct {
	name  string
	links []linkSpec
	items []workItem
}{
	{
		// Cybertwin §V-B2 scaled 8x in rate: two apps, 10 MB-class and
		// 2.5 MB-class (here 4 MB and 1 MB), two equal 20 Mbit/s paths.
		name:  "equal-paths",
		links: []linkSpec{{20 * bytesPerMbit, 10 * time.Millisecond}, {20 * bytesPerMbit, 10 * time.Millisecond}},
		items: []workItem{{"video", 4_000_000, 0}, {"file", 1_000_000, 0}},
	},
	{
		// Heterogeneous paths (fast near, slow far) and a mix: two bulk
		// downloads and a trickle of small page loads.
		name:  "unequal-paths",
		links: []linkSpec{{32 * bytesPerMbit, 5 * time.Millisecond}, {8 * bytesPerMbit, 40 * time.Millisecond}},
		items: append([]workItem{{"video", 3_000_000, 0}, {"file", 1_000_000, 100 * time.Millisecond}}, smallItems(12, 30_000, 80*time.Millisecond)...),
	},
}

const bytesPerMbit = 1e6 / 8 // bytes/s per Mbit/s

// efficiency is the ideal makespan (every byte at the paths' total rate)
// over the measured one.
func efficiency(r compareResult, links []linkSpec) float64 {
	var total float64
	for _, l := range links {
		total += l.rate
	}
	return float64(r.bytes) / total / r.makespan.Seconds()
}

// BenchmarkSchedulerComparison measures every policy on two shaped loopback
// paths and reports the makespan, the aggregation efficiency (ideal
// makespan / measured) and the mean completion time of large and small
// requests (agent/DESIGN.md's table comes from it):
//
//	go test -run '^$' -bench SchedulerComparison -benchtime 2x ./agent
//
// With -short (CI's run of every benchmark once, to keep it compiling
// and running) only the first policy runs: each takes seconds of real time.
func BenchmarkSchedulerComparison(b *testing.B) {
	policies := append(append([]string(nil), pathchoice.SchedulerNames...), pathchoice.SchedPriority+"/nostripe", pathchoice.SchedLOB+"/nostripe", pathchoice.SchedMinRTT+"/nostripe")
	if testing.Short() {
		policies = policies[:1]
	}
	for _, sc := range compareScenarios {
		for _, policy := range policies {
			b.Run(sc.name+"/"+policy, func(b *testing.B) {
				var acc compareResult
				n := 0
				for b.Loop() {
					r := runWorkload(b, policy, sc.links, sc.items)
					acc.makespan += r.makespan
					acc.bigMean += r.bigMean
					acc.smallMean += r.smallMean
					acc.bytes = r.bytes
					n++
				}
				acc.makespan /= time.Duration(n)
				acc.bigMean /= time.Duration(n)
				acc.smallMean /= time.Duration(n)
				b.ReportMetric(float64(acc.makespan.Milliseconds()), "makespan_ms")
				b.ReportMetric(efficiency(acc, sc.links), "eff")
				b.ReportMetric(float64(acc.bigMean.Milliseconds()), "big_mean_ms")
				b.ReportMetric(float64(acc.smallMean.Milliseconds()), "small_mean_ms")
			})
		}
	}
}

func smallItems(n int, size int64, every time.Duration) []workItem {
	var out []workItem
	for i := range n {
		out = append(out, workItem{fmt.Sprintf("web%d", i%3), size, time.Duration(i) * every})
	}
	return out
}
