package agent

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
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
func runWorkload(t *testing.T, sched string, links []linkSpec, items []workItem) compareResult {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *ServerConfig) { c.Logf = nil }, up.hostport)
	byIP := map[string]linkSpec{}
	paths := loopbackPaths(len(links))
	for i, l := range links {
		byIP[paths[i].Addr.String()] = l
	}
	name, nostripe := strings.CutSuffix(sched, "/nostripe")
	tc := startClient(t, ts, len(links), true, func(c *ClientConfig) {
		c.Logf = nil
		c.Scheduler, _ = NewScheduler(name, len(links), 1)
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

// TestSchedulerComparison measures the policies on two shaped loopback
// paths. It takes about a minute, so it runs only with
// AGENT_SCHED_COMPARE=1 (the README's table comes from it):
//
//	AGENT_SCHED_COMPARE=1 go test -run TestSchedulerComparison -v ./agent
func TestSchedulerComparison(t *testing.T) {
	if os.Getenv("AGENT_SCHED_COMPARE") == "" {
		t.Skip("set AGENT_SCHED_COMPARE=1 to run the scheduler comparison")
	}
	const mbps = 1e6 / 8 // bytes/s per Mbit/s
	scenarios := []struct {
		name  string
		links []linkSpec
		items []workItem
	}{
		{
			// Cybertwin §V-B2 scaled 8x in rate: two apps, 10 MB-class and
			// 2.5 MB-class (here 4 MB and 1 MB), two equal 20 Mbit/s paths.
			name:  "two apps, equal paths",
			links: []linkSpec{{20 * mbps, 10 * time.Millisecond}, {20 * mbps, 10 * time.Millisecond}},
			items: []workItem{{"video", 4_000_000, 0}, {"file", 1_000_000, 0}},
		},
		{
			// Heterogeneous paths (fast near, slow far) and a mix: two bulk
			// downloads and a trickle of small page loads.
			name:  "mixed load, unequal paths",
			links: []linkSpec{{32 * mbps, 5 * time.Millisecond}, {8 * mbps, 40 * time.Millisecond}},
			items: append([]workItem{{"video", 3_000_000, 0}, {"file", 1_000_000, 100 * time.Millisecond}}, smallItems(12, 30_000, 80*time.Millisecond)...),
		},
	}
	reps := 2
	var report strings.Builder
	for _, sc := range scenarios {
		var total float64
		for _, l := range sc.links {
			total += l.rate
		}
		fmt.Fprintf(&report, "\n%s (ideal makespan = bytes / total rate)\n%-18s %12s %8s %12s %12s\n", sc.name, "policy", "makespan_ms", "eff", "big_mean_ms", "small_mean_ms")
		type row struct {
			name string
			r    compareResult
		}
		var rows []row
		for _, s := range append(append([]string(nil), SchedulerNames...), SchedPriority+"/nostripe", SchedLOB+"/nostripe", SchedMinRTT+"/nostripe") {
			var acc compareResult
			for range reps {
				r := runWorkload(t, s, sc.links, sc.items)
				acc.makespan += r.makespan / time.Duration(reps)
				acc.bigMean += r.bigMean / time.Duration(reps)
				acc.smallMean += r.smallMean / time.Duration(reps)
				acc.bytes = r.bytes
			}
			rows = append(rows, row{s, acc})
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].r.makespan < rows[j].r.makespan })
		for _, r := range rows {
			ideal := time.Duration(float64(r.r.bytes) / total * float64(time.Second))
			fmt.Fprintf(&report, "%-18s %12d %8.2f %12d %12d\n", r.name, r.r.makespan.Milliseconds(),
				float64(ideal)/float64(r.r.makespan), r.r.bigMean.Milliseconds(), r.r.smallMean.Milliseconds())
		}
	}
	t.Log(report.String())
}

func smallItems(n int, size int64, every time.Duration) []workItem {
	var out []workItem
	for i := range n {
		out = append(out, workItem{fmt.Sprintf("web%d", i%3), size, time.Duration(i) * every})
	}
	return out
}
