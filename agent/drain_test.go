package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// ct-client's drain on fake time (what SIGTERM runs): a response that can
// finish within the drain arrives whole and Shutdown reports nothing left;
// one that cannot is cut when the drain ends — the app sees an error, never
// a clean short body — and Shutdown says what it reset; and the proxy
// takes no new connection once the drain has begun.
func TestClientDrainMem(t *testing.T) {
	const rate = 1e6 // bytes/s on the one path: sizes below are seconds
	for _, tc := range []struct {
		name  string
		size  int64
		drain time.Duration
		whole bool
	}{
		{"finishes within the drain", 2_000_000, 10 * time.Second, true},
		{"cut at the drain's end", 30_000_000, 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := startMemAgent(t, 1, nil, func(c *ClientConfig) { c.StripeMin = -1 })
				m.n.SetLink(memPath(0).Addr, rate, 64<<10)
				resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, tc.size))
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("GET: %v %v", resp, err)
				}
				defer resp.Body.Close()
				type read struct {
					n   int64
					sum [32]byte
					err error
				}
				got := make(chan read, 1)
				go func() {
					h := sha256.New()
					n, err := io.Copy(h, resp.Body)
					got <- read{n, [32]byte(h.Sum(nil)), err}
				}()
				time.Sleep(200 * time.Millisecond) // the response is flowing
				ctx, cancel := context.WithTimeout(context.Background(), tc.drain)
				defer cancel()
				drained := make(chan error, 1)
				begun := time.Now()
				go func() { drained <- m.c.Shutdown(ctx) }()
				synctest.Wait()
				if c, err := m.pn.Dial(context.Background(), "tcp", "proxy:8080"); err == nil {
					c.Close()
					t.Error("the proxy took a new connection while draining")
				}
				r := <-got
				derr := <-drained
				took := time.Since(begun)
				t.Logf("%d of %d bytes, %v after the drain began (fake time), Shutdown: %v", r.n, tc.size, took, derr)
				if tc.whole {
					if r.err != nil || r.n != tc.size || r.sum != patternSum(tc.size) {
						t.Fatalf("got %d of %d bytes (%v) or not intact", r.n, tc.size, r.err)
					}
					if derr != nil {
						t.Fatalf("Shutdown: %v, want nothing left", derr)
					}
					return
				}
				if r.err == nil || r.n >= tc.size {
					t.Fatalf("cut response: %d of %d bytes, err %v: want an error before the end", r.n, tc.size, r.err)
				}
				if took < tc.drain {
					t.Fatalf("cut %v after the drain began, before its %v were up", took, tc.drain)
				}
				if !errors.Is(derr, context.DeadlineExceeded) {
					t.Fatalf("Shutdown: %v, want the drain's deadline and what it reset", derr)
				}
			})
		})
	}
}
