package agent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hetquic/hetquic/agent/server"
)

// TestStripeUnderLimitMem: striping with a per-client stream limit far
// below what the pieces want: ct-client waits for slots and falls back to
// one stream, and every body arrives whole. On the fake network and fake
// time: ct-client's limit retries back off on a clock that a loaded
// machine cannot stretch past their budget, as it did on real sockets.
func TestStripeUnderLimitMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, func(c *server.Config) { c.Limits = server.Limits{MaxStreams: 3} }, nil)
		// A ct-client that ignores the announced max_streams (an older
		// one, or one whose slots another process shares): ct-server's
		// 429s bite.
		m.c.slots.Store(nil)
		const n, size = 4, 5_000_000
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || sha256.Sum256(body) != patternSum(size) {
					errs <- fmt.Errorf("status %d, %d bytes, %v", resp.StatusCode, len(body), err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if m.c.stripes.Load() == 0 || m.c.limitRetries.Load() == 0 {
			t.Errorf("striped %d, limit retries %d: the limit never bit during striping", m.c.stripes.Load(), m.c.limitRetries.Load())
		}
		t.Logf("striped %d, limit retries %d, fallbacks to one stream %d", m.c.stripes.Load(), m.c.limitRetries.Load(), m.c.stripeFallbacks.Load())
	})
}
