package pcm

import (
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/pathsel"
)

// TestTransportTCTStartsAtTheStream: a request that waits for a stream
// (the server's limit of concurrent request streams reached) has its
// task completion time counted from its stream (PCM Eq. 3, as Get counts
// it), not from when it asked for one. Under load the wait is the other
// requests', not its path's: after a failover the replayed burst used up
// the streams, and the requests right after it measured the best live
// path at over 1.5 × its round trip through Transport (but not through
// Client), so the selector left it.
func TestTransportTCTStartsAtTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		_, hc, base := memTransport(t, n, slowHandler(), Config{Strategy: pathsel.Config{Strategy: pathsel.Fixed}})
		getBody(t, hc, base+"/bytes/10") // dial
		// quic-go's server allows 100 concurrent request streams: fill them.
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				getBody(t, hc, base+"/slowhead")
			}()
		}
		time.Sleep(100 * time.Millisecond) // every slow request has its stream
		start := time.Now()
		resp, err := hc.Get(base + "/bytes/10")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		waited := time.Since(start)
		wg.Wait()
		res, ok := ResultOf(resp)
		if !ok {
			t.Fatal("no result")
		}
		rtt := 4 * oneWay
		if waited < time.Second || res.TCT() > 2*rtt {
			t.Errorf("waited %v for the GET (want the slow ones' seconds), its TCT %v (want about one round trip, %v)", waited, res.TCT(), rtt)
		}
	})
}
