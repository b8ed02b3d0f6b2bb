package agent

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countingWriter is an app's ResponseWriter that records its writes and
// flushes.
type countingWriter struct {
	mu      sync.Mutex // the coalescer's timer writes from its own goroutine
	h       http.Header
	writes  []int
	flushes int
	fail    error
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, len(b))
	return len(b), nil
}
func (w *countingWriter) Flush() { w.mu.Lock(); w.flushes++; w.mu.Unlock() }

// seen is what w has recorded.
func (w *countingWriter) seen() ([]int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.writes...), w.flushes
}

// TestCoalescer: reads of a few KiB reach the app in writes of
// coalesceBytes; a small tail waits coalesceDelay at most; stop flushes
// and nothing is written after it; a failed write is reported.
func TestCoalescer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &countingWriter{h: http.Header{}}
		c := newCoalescer(w)
		chunk := make([]byte, 3<<10)
		for range 40 { // 120 KiB: one full batch out
			if err := c.write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if ws, fl := w.seen(); len(ws) != 1 || ws[0] != coalesceBytes || fl != 1 {
			t.Fatalf("writes %v, %d flushes; want one of %d, flushed", ws, fl, coalesceBytes)
		}
		time.Sleep(coalesceDelay / 2)
		synctest.Wait()
		if ws, _ := w.seen(); len(ws) != 1 {
			t.Fatalf("the tail went out before coalesceDelay: %v", ws)
		}
		time.Sleep(coalesceDelay)
		synctest.Wait()
		if ws, fl := w.seen(); len(ws) != 2 || ws[1] != 40*len(chunk)-coalesceBytes || fl != 2 {
			t.Fatalf("after coalesceDelay: writes %v, %d flushes", ws, fl)
		}
		if err := c.write(chunk[:100]); err != nil {
			t.Fatal(err)
		}
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		if ws, _ := w.seen(); len(ws) != 3 || ws[2] != 100 {
			t.Fatalf("stop: writes %v", ws)
		}
		time.Sleep(10 * coalesceDelay)
		synctest.Wait()
		if ws, fl := w.seen(); len(ws) != 3 || fl != 3 {
			t.Fatalf("written after stop: %v, %d flushes", ws, fl)
		}

		gone := errors.New("app gone")
		f := &countingWriter{h: http.Header{}, fail: gone}
		c = newCoalescer(f)
		if err := c.write(chunk); err != nil {
			t.Fatalf("a batched write failed early: %v", err)
		}
		time.Sleep(2 * coalesceDelay) // the timer's flush fails
		synctest.Wait()
		if err := c.write(chunk); !errors.Is(err, gone) {
			t.Fatalf("write after a failed flush: %v, want %v", err, gone)
		}
		if err := c.stop(); !errors.Is(err, gone) {
			t.Fatalf("stop: %v, want %v", err, gone)
		}
	})
}
