package pcm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestVerdictCountsRequestsSentInTheSilence: a Client on 200 / 210 ms
// paths under a 5 kB GET every 10 ms, whose active path is cut. The
// requests waiting at the cut are fewer than half the server's stream
// bound (creditShortLocked), and every 10 ms one more joins them: they
// pass it only after the detector has poked, so the failover takes a
// new connection although none was dialled at the poke (on main: 750 ms
// of silence, two PTOs after the poke). The verdict must then come as
// soon as with the requests waiting at the poke already (the "backlog"
// row: forty more sent just before the cut): one PTO after the poke once
// the new connection is up (verdictWait), not two. The steady row is
// what the redial/210-214 row of TestHeldOutCuts met when its selector
// moved earlier (a larger congestion window at the cut, so fewer
// requests waiting): the stall was declared after 750 ms of silence
// instead of 500 ms, and its longest request took 1.58–1.97 s.
func TestVerdictCountsRequestsSentInTheSilence(t *testing.T) {
	for _, backlog := range []int{0, 40} {
		t.Run(fmt.Sprintf("backlog%d", backlog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { silenceVerdictCase(t, backlog) })
		})
	}
}

// stalledAfter reads the silence a failover counted from its log line.
var stalledAfter = regexp.MustCompile(`stalled: nothing acknowledged for (\S+); failing over`)

// silenceVerdictCase is TestVerdictCountsRequestsSentInTheSilence with
// backlog more GETs sent 50 ms before the cut.
func silenceVerdictCase(t *testing.T, backlog int) {
	n := memnet.New()
	var mu sync.Mutex
	var verdicts []time.Duration
	logf := func(format string, args ...any) {
		m := stalledAfter.FindStringSubmatch(fmt.Sprintf(format, args...))
		if m == nil {
			return
		}
		d, err := time.ParseDuration(m[1])
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			verdicts = append(verdicts, d)
		}
	}
	var want atomic.Int32
	c := memDial(t, n, 2, Config{Selector: wishSelector{&want}, Logf: logf})
	const rtt0, rtt1 = 200 * time.Millisecond, 210 * time.Millisecond
	n.SetDelay(memPath(0), rtt0-oneWay) // the server's side adds oneWay
	n.SetDelay(memPath(1), rtt1-oneWay)
	visitPaths(t, c, 1, 0) // both validated; on the 200 ms path
	base := "https://" + memServer.String()
	const cutAt = 2 * time.Second
	var extra sync.WaitGroup
	if backlog > 0 {
		time.AfterFunc(cutAt-50*time.Millisecond, func() { sendBacklog(t, c, base, backlog, &extra) })
	}
	r := steadyGets(t, c, base, 3*time.Second, cutAt, func() { n.SetDrop(memPath(0), true) })
	extra.Wait()
	if r.failed > 0 {
		t.Fatalf("%d of %d requests failed: %v", r.failed, r.sent, r.errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(verdicts) != 1 {
		t.Fatalf("failovers %v, want one", verdicts)
	}
	// The poke after half the floor, its ACK's wait of one PTO once the
	// new connection is up (under the floor's other half here), and up to
	// two detector ticks late.
	bound := DefaultStallTimeout + 2*DefaultStallTimeout/stallTicks
	t.Logf("stall declared after %v of silence; longest request %v", verdicts[0], r.longest)
	if verdicts[0] > bound {
		t.Errorf("stall declared after %v of silence, want ≤ %v: the redial was not begun once the requests outgrew the stream bound", verdicts[0], bound)
	}
}

// sendBacklog sends n GETs of 5 kB at once through c, each checked.
func sendBacklog(t *testing.T, c *Client, base string, n int, wg *sync.WaitGroup) {
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/bytes/5120", nil)
			resp, err := c.RoundTrip(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil {
				t.Errorf("a backlog request: %v", err)
			}
		}()
	}
}
