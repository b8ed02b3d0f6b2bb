// Package pktqueue is the receive side of a net.PacketConn built from
// goroutines rather than one socket: a queue of datagrams whose reads honour
// a read deadline and Close, as a socket's do. PCM's rebind mode (many
// sockets behind one conn) and emu/memnet (an in-memory network) both
// receive through it.
package pktqueue

import (
	"net"
	"os"
	"sync"
	"time"
)

// Datagram is one queued datagram, or the error a reader should return.
type Datagram struct {
	B    []byte
	From net.Addr
	Err  error
	// Free, if set, is given B once it has been copied to a reader:
	// senders that pool their buffers take it back there.
	Free func([]byte)
}

// Queue holds datagrams until they are read.
type Queue struct {
	in   chan Datagram
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	deadline time.Time
	wake     chan struct{} // closed and replaced when the deadline changes
}

// New returns a queue that holds up to n datagrams.
func New(n int) *Queue {
	return &Queue{in: make(chan Datagram, n), done: make(chan struct{}), wake: make(chan struct{})}
}

// Push queues d, waiting for room; it reports false once the queue is closed.
func (q *Queue) Push(d Datagram) bool {
	select {
	case <-q.done:
		return false
	default:
	}
	select {
	case q.in <- d:
		return true
	case <-q.done:
		return false
	}
}

// TryPush queues d if there is room and drops it otherwise, as a full
// socket buffer drops.
func (q *Queue) TryPush(d Datagram) {
	select {
	case <-q.done:
		return
	default:
	}
	select {
	case q.in <- d:
	default:
	}
}

// Done is closed by Close.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Close wakes every reader with net.ErrClosed; it reports whether this call
// closed the queue.
func (q *Queue) Close() bool {
	closed := false
	q.once.Do(func() { close(q.done); closed = true })
	return closed
}

// ReadFrom waits for a datagram, the read deadline or Close.
func (q *Queue) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		q.mu.Lock()
		deadline, wake := q.deadline, q.wake
		q.mu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return 0, nil, os.ErrDeadlineExceeded
			}
			timer = time.NewTimer(d)
			timeout = timer.C
		}
		n, from, err, again := q.wait(b, timeout, wake)
		if timer != nil {
			timer.Stop()
		}
		if !again {
			return n, from, err
		}
	}
}

// wait takes one datagram or reports why not; again: the deadline moved.
func (q *Queue) wait(b []byte, timeout <-chan time.Time, wake <-chan struct{}) (int, net.Addr, error, bool) {
	select {
	case d := <-q.in:
		if d.Err != nil {
			return 0, nil, d.Err, false
		}
		n := copy(b, d.B)
		if d.Free != nil {
			d.Free(d.B)
		}
		return n, d.From, nil, false
	case <-q.done:
		return 0, nil, net.ErrClosed, false
	case <-timeout:
		return 0, nil, os.ErrDeadlineExceeded, false
	case <-wake:
		return 0, nil, nil, true
	}
}

// SetReadDeadline sets the deadline of pending and future reads.
func (q *Queue) SetReadDeadline(t time.Time) {
	q.mu.Lock()
	q.deadline = t
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
}
