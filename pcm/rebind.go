package pcm

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// multiConn is the "rebind" mode's socket: one net.PacketConn over one UDP
// socket per local path, which sends from the active path's socket and
// receives on all of them. quic-go sees a single socket, so a switch keeps
// the connection ID and changes only the source address — what the PCM paper
// does (§3.4) — and the server treats it as a NAT rebinding.
//
// What this gives up, compared with the default mode (quic-go's path API):
//   - RFC 9000 §9.5: the same connection ID on two networks lets an observer
//     link them; the default mode uses a fresh connection ID per path;
//   - the client's RTT estimate and congestion window carry over from the
//     old path, because quic-go does not know the path changed;
//   - the client validates nothing: a black-holed path is found only when a
//     request stalls on it;
//   - until the server has validated the new address it may send at most
//     three times what it received from it (RFC 9000 §8.1), and quic-go's
//     UDP optimisations (GSO, ECN) are off on a wrapped socket.
type multiConn struct {
	socks  []net.PacketConn
	active atomic.Int32
	in     chan datagram
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	deadline time.Time
	wake     chan struct{} // closed and replaced when the deadline changes
}

type datagram struct {
	b    []byte
	from net.Addr
	err  error
}

func newMultiConn(socks []net.PacketConn) *multiConn {
	m := &multiConn{socks: socks, in: make(chan datagram, 256), done: make(chan struct{}), wake: make(chan struct{})}
	for _, s := range socks {
		m.wg.Add(1)
		go m.read(s)
	}
	return m
}

func (m *multiConn) read(s net.PacketConn) {
	defer m.wg.Done()
	for {
		buf := make([]byte, 1<<16)
		n, from, err := s.ReadFrom(buf)
		if err != nil {
			select {
			case <-m.done: // closing: the error is ours
			case m.in <- datagram{err: err}:
			}
			return
		}
		select {
		case m.in <- datagram{b: buf[:n], from: from}:
		case <-m.done:
			return
		}
	}
}

func (m *multiConn) setActive(i int) { m.active.Store(int32(i)) }

func (m *multiConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		m.mu.Lock()
		deadline, wake := m.deadline, m.wake
		m.mu.Unlock()
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
		n, from, err, again := m.wait(b, timeout, wake)
		if timer != nil {
			timer.Stop()
		}
		if !again {
			return n, from, err
		}
	}
}

// wait takes one datagram, or reports why not; again means the deadline
// moved and ReadFrom must look at it afresh.
func (m *multiConn) wait(b []byte, timeout <-chan time.Time, wake <-chan struct{}) (int, net.Addr, error, bool) {
	select {
	case d := <-m.in:
		if d.err != nil {
			return 0, nil, d.err, false
		}
		return copy(b, d.b), d.from, nil, false
	case <-m.done:
		return 0, nil, net.ErrClosed, false
	case <-timeout:
		return 0, nil, os.ErrDeadlineExceeded, false
	case <-wake:
		return 0, nil, nil, true
	}
}

func (m *multiConn) WriteTo(b []byte, to net.Addr) (int, error) {
	return m.socks[m.active.Load()].WriteTo(b, to)
}

// Close closes every socket and waits for the readers to end.
func (m *multiConn) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, s := range m.socks {
			err = errors.Join(err, s.Close())
		}
		m.wg.Wait()
	})
	return err
}

func (m *multiConn) LocalAddr() net.Addr { return m.socks[m.active.Load()].LocalAddr() }

func (m *multiConn) SetDeadline(t time.Time) error {
	m.SetWriteDeadline(t)
	return m.SetReadDeadline(t)
}

func (m *multiConn) SetReadDeadline(t time.Time) error {
	m.mu.Lock()
	m.deadline = t
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
	return nil
}

func (m *multiConn) SetWriteDeadline(t time.Time) error {
	var err error
	for _, s := range m.socks {
		err = errors.Join(err, s.SetWriteDeadline(t))
	}
	return err
}
