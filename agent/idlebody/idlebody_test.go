package idlebody

import (
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// readAll reads body to its end or first error, with the time it took.
func readAll(body *Body) (int64, time.Duration, error) {
	start := time.Now()
	n, err := io.Copy(io.Discard, body)
	return n, time.Since(start), err
}

// TestBodyCutWhenIdle: a body that stops short of ProgressBytes is cut
// Timeout after its window began, as the app's failure.
func TestBodyCutWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app, peer := net.Pipe()
		defer app.Close()
		defer peer.Close()
		go peer.Write(make([]byte, ProgressBytes/2)) // then silence
		body := New(app, app.SetReadDeadline)
		n, took, err := readAll(body)
		var ae *AppError
		if !errors.Is(err, ErrIdle) || !errors.As(err, &ae) || body.Failure() == nil {
			t.Fatalf("after %d bytes: %v (failure %v)", n, err, body.Failure())
		}
		if took != Timeout {
			t.Fatalf("cut after %v, want %v", took, Timeout)
		}
	})
}

// TestBodyMovingNeverCut: a body that makes ProgressBytes every half
// Timeout runs far past Timeout and ends cleanly.
func TestBodyMovingNeverCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app, peer := net.Pipe()
		defer app.Close()
		const windows = 6
		go func() {
			for range windows {
				peer.Write(make([]byte, ProgressBytes))
				time.Sleep(Timeout / 2)
			}
			peer.Close()
		}()
		n, took, err := readAll(New(app, app.SetReadDeadline))
		if err != nil || n != windows*ProgressBytes || took < Timeout {
			t.Fatalf("%d bytes in %v: %v", n, took, err)
		}
	})
}
