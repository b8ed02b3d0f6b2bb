package pcm

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/pathsel"
)

// A response whose path was rested while it was in flight (a stall
// verdict, a failed probe or revival check) still reaches the app intact
// and without an error: the selector, which no longer holds the path,
// takes no sample. main's Get wrote the body and then failed with
// "pathsel: unknown path" (pcm/measure's TestCutsLoseNoRequest under
// -race at load 9: 1 of 150 GETs).
func TestResponseOnRestedPathDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		release := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.Write([]byte("complete"))
		})
		c := memDialHandler(t, n, 2, Config{Strategy: pathsel.Config{Strategy: pathsel.Fixed}}, h)
		type got struct {
			res Result
			err error
		}
		done := make(chan got)
		go func() {
			var w writeCounter
			res, err := c.Get(context.Background(), "/held", &w)
			if err == nil && w.n != len("complete") {
				t.Errorf("body %d bytes, want %d", w.n, len("complete"))
			}
			done <- got{res, err}
		}()
		synctest.Wait() // the request waits in the handler
		c.mu.Lock()
		c.markDownLocked(c.active)
		c.mu.Unlock()
		close(release)
		g := <-done
		if g.err != nil {
			t.Fatalf("a complete response on a path rested meanwhile failed: %v", g.err)
		}
		if g.res.Credited {
			t.Errorf("credited to path %d, which the selector no longer holds", g.res.Path)
		}
	})
}

// writeCounter counts the bytes written to it.
type writeCounter struct{ n int }

func (w *writeCounter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}
