// Package idlebody is the rule both ends of the agent apply to a request
// body: it must deliver ProgressBytes per Timeout, or it is cut (the app's
// body at ct-client, ct-client's at ct-server). A body that stops is its
// sender's trouble, and without a cut each one holds a stream slot and an
// upstream connection for ever. It is apart so that ct-client and ct-server
// share the one rule without importing each other.
package idlebody

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// The body's progress rule.
const (
	// Timeout: a request body (the app's to ct-client, ct-client's
	// to ct-server) that delivers fewer than ProgressBytes in this long
	// is cut — 408 if no response head went out, else a reset. A body that
	// stops is the sender's trouble or its path's, and without a cut each
	// such request holds a stream slot and an upstream connection for ever
	// (1 byte/s would go on for ever). 10 s is ct-server's
	// head timeout: a body may be as slow to resume as a head to arrive.
	Timeout = 10 * time.Second
	// ProgressBytes is the progress a body must make per
	// Timeout (so at least ~100 bytes/s): counting single bytes as
	// progress would let 1 byte/s hold its slot for ever (Apache's
	// mod_reqtimeout MinRate, not nginx's read-to-read timeout). Interactive
	// byte streams belong in CONNECT tunnels, which have no such rule.
	ProgressBytes = 1 << 10
)

var (
	// ErrIdle: the request body made no progress for Timeout.
	ErrIdle = errors.New("request body idle")
	// ErrStopped: the attempt sending a body ended first.
	ErrStopped = errors.New("request body: sending stopped")
)

// AppError is the app's request body failing (malformed framing,
// idle, closed): the app's trouble, answered with 400 or 408, never a path
// to move from.
type AppError struct{ err error }

func (e *AppError) Error() string { return "request body: " + e.err.Error() }

func (e *AppError) Unwrap() error { return e.err }

// Body reads a request body that must deliver ProgressBytes per
// Timeout: each read's deadline (set through setDeadline, the
// app connection's or the stream's) is the end of the current progress
// window. stop cuts it from outside (the attempt that sends it ended).
//
// Once its reader returned io.EOF the body sets no deadline again (Clear
// only lifts one): on an app's HTTP/1.1 connection net/http then reads
// the connection in the background to notice the app hanging up, and a
// deadline passing there (Stop's, or a read window's) looks to it like
// the app gone: it cancels the connection's context, so the request in
// flight and every later one on the connection fail at once ("context
// canceled").
type Body struct {
	r           io.ReadCloser
	setDeadline func(time.Time) error
	idle        time.Duration
	min         int64

	mu      sync.Mutex
	window  time.Time // start of the progress window
	n       int64     // bytes in the window
	stopped bool
	ended   bool      // the reader hit its end: the deadline is no longer the body's
	err     *AppError // the body's failure, once it failed
}

// Failure is the body's failure (nil: none): http.Request.Write hides it
// in a type of its own.
func (b *Body) Failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		return nil
	}
	return b.err
}

// New wraps r; setDeadline sets the deadline of the connection or stream
// it reads from.
func New(r io.ReadCloser, setDeadline func(time.Time) error) *Body {
	return &Body{r: r, setDeadline: setDeadline, idle: Timeout, min: ProgressBytes}
}

func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return 0, ErrStopped
	}
	if b.ended {
		b.mu.Unlock()
		return 0, io.EOF // http.Request.Write reads past the end to check the length
	}
	if b.window.IsZero() {
		b.window = time.Now()
	}
	end := b.window.Add(b.idle)
	b.setDeadline(end)
	b.mu.Unlock()
	n, err := b.r.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n += int64(n); b.n >= b.min {
		b.window, b.n = time.Now(), 0
	}
	if b.stopped {
		return n, ErrStopped // our cut, not the app's failure
	}
	if err != nil && err != io.EOF {
		if IsTimeout(err) && !time.Now().Before(end) {
			err = ErrIdle
		}
		b.err = &AppError{err}
		return n, b.err
	}
	b.ended = err == io.EOF
	return n, err
}

func (b *Body) Close() error { return b.r.Close() }

// Stop makes a pending and every later Read fail at once. A body at its
// end has no read pending and leaves the deadline alone (see Body); one
// whose last read is returning just then may still set it.
func (b *Body) Stop() {
	b.mu.Lock()
	b.stopped = true
	ended := b.ended
	b.mu.Unlock()
	if !ended {
		b.setDeadline(time.Unix(1, 0))
	}
}

// Resume undoes Stop for another attempt that sends the body (a replay):
// its progress window starts afresh at its first read, as the body waited
// on ct-client, not on the app, meanwhile.
func (b *Body) Resume() {
	b.mu.Lock()
	b.stopped, b.window, b.n = false, time.Time{}, 0
	b.mu.Unlock()
}

// Clear lifts the deadline the body set (the connection may carry more).
func (b *Body) Clear() { b.setDeadline(time.Time{}) }

// IsTimeout says err is a network timeout (a read deadline passed).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
