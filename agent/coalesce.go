package agent

import (
	"bufio"
	"net/http"
	"sync"
	"time"
)

// A response body from ct-server reaches ct-client a few packets per read
// (about 3 KiB on a 150 Mbit/s path), and writing and flushing each read
// to the app cost a write system call per read: 7.7 % of the experiment
// process's CPU at 150 Mbit/s, and as much again in the app's reads.
// coalescer gathers the reads into writes of up to coalesceBytes, and
// flushes what it holds at most coalesceDelay after its first byte, so
// an app that waits for a small response, or a trickle, waits no longer
// than that.
const (
	// coalesceBytes: a write this large costs the system call a few
	// per cent of the copying it moves.
	coalesceBytes = 64 << 10
	// coalesceDelay is imperceptible to an app and many times the gap
	// between reads while a response streams at any rate worth batching.
	coalesceDelay = time.Millisecond
)

// coalescer writes to an app's ResponseWriter in batches (see above). Its
// methods may race with its timer's flush, and so take mu; after stop it
// writes nothing more, so the handler may go on with the ResponseWriter.
type coalescer struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	rc      *http.ResponseController
	timer   *time.Timer
	stopped bool
	err     error // the first failed write or flush
}

func newCoalescer(w http.ResponseWriter) *coalescer {
	return &coalescer{bw: bufio.NewWriterSize(w, coalesceBytes), rc: http.NewResponseController(w)}
}

// write adds b to the batch; it returns the first error of any write so
// far, whether of this batch or an earlier one the timer flushed.
func (c *coalescer) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	before := c.bw.Buffered()
	if _, err := c.bw.Write(b); err != nil {
		c.err = err
		return err
	}
	if c.bw.Buffered() < before+len(b) { // a full batch went on to the app
		if err := c.rc.Flush(); err != nil {
			c.err = err
		}
	}
	if before == 0 || c.bw.Buffered() < before+len(b) {
		if c.timer == nil {
			c.timer = time.AfterFunc(coalesceDelay, c.tick)
		} else {
			c.timer.Reset(coalesceDelay)
		}
	}
	return c.err
}

// tick flushes a batch that has waited coalesceDelay.
func (c *coalescer) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped && c.err == nil && c.bw.Buffered() > 0 {
		c.flushLocked()
	}
}

// flushLocked sends what is batched on to the app; mu held.
func (c *coalescer) flushLocked() {
	if err := c.bw.Flush(); err != nil {
		c.err = err
		return
	}
	if err := c.rc.Flush(); err != nil && c.err == nil {
		c.err = err
	}
}

// stop flushes what is batched and ends the batching: nothing is written
// after it returns. It returns the first error of any write.
func (c *coalescer) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped && c.err == nil && c.bw.Buffered() > 0 {
		c.flushLocked()
	}
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
	return c.err
}
