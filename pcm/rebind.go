package pcm

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hetquic/hetquic/internal/pktqueue"
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
	q      *pktqueue.Queue
	wg     sync.WaitGroup
	rx     *rxLedger // the bytes each socket received: Result.Carrier
}

// datagramBufs holds the queued datagrams' buffers: a reader reads into a
// 64 KiB scratch buffer of its own (a UDP datagram's most) and queues a
// copy in one of these, which the queue gives back once quic-go has read it.
var datagramBufs = sync.Pool{New: func() any { b := make([]byte, 0, maxQueuedDatagram); return &b }}

// maxQueuedDatagram is the size of a pooled buffer: QUIC's datagrams fit a
// 1500-byte MTU, and quic-go sends none larger than 1452 bytes of payload
// unless path MTU discovery finds more; bigger ones get a buffer of their own.
const maxQueuedDatagram = 1500

func newMultiConn(socks []net.PacketConn, rx *rxLedger) *multiConn {
	m := &multiConn{socks: socks, q: pktqueue.New(256), rx: rx}
	for i, s := range socks {
		m.wg.Add(1)
		go m.read(i, s)
	}
	return m
}

func (m *multiConn) read(i int, s net.PacketConn) {
	defer m.wg.Done()
	scratch := make([]byte, 1<<16)
	for {
		n, from, err := s.ReadFrom(scratch)
		if err != nil {
			m.q.Push(pktqueue.Datagram{Err: err}) // after Close the error is ours and dropped
			return
		}
		m.rx.add(i, int64(n))
		d := pktqueue.Datagram{From: from}
		if n <= maxQueuedDatagram {
			bp := datagramBufs.Get().(*[]byte)
			d.B, d.Free = append((*bp)[:0], scratch[:n]...), freeDatagram
		} else {
			d.B = append([]byte(nil), scratch[:n]...)
		}
		if !m.q.Push(d) {
			return
		}
	}
}

func freeDatagram(b []byte) { datagramBufs.Put(&b) }

func (m *multiConn) setActive(i int) { m.active.Store(int32(i)) }

func (m *multiConn) ReadFrom(b []byte) (int, net.Addr, error) { return m.q.ReadFrom(b) }

func (m *multiConn) WriteTo(b []byte, to net.Addr) (int, error) {
	return m.socks[m.active.Load()].WriteTo(b, to)
}

// Close closes every socket and waits for the readers to end.
func (m *multiConn) Close() error {
	var err error
	if m.q.Close() {
		for _, s := range m.socks {
			err = errors.Join(err, s.Close())
		}
		m.wg.Wait()
	}
	return err
}

func (m *multiConn) LocalAddr() net.Addr { return m.socks[m.active.Load()].LocalAddr() }

func (m *multiConn) SetDeadline(t time.Time) error {
	m.SetWriteDeadline(t)
	return m.SetReadDeadline(t)
}

func (m *multiConn) SetReadDeadline(t time.Time) error {
	m.q.SetReadDeadline(t)
	return nil
}

func (m *multiConn) SetWriteDeadline(t time.Time) error {
	var err error
	for _, s := range m.socks {
		err = errors.Join(err, s.SetWriteDeadline(t))
	}
	return err
}
