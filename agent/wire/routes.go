package wire

import (
	"context"
	"sync"

	"github.com/quic-go/quic-go"
)

// DatagramRoutes maps (connection, stream) to the flow that receives its
// datagrams; each side keeps one.
type DatagramRoutes struct {
	mu sync.Mutex
	m  map[routeKey]func([]byte)
}

type routeKey struct {
	conn *quic.Conn
	id   quic.StreamID
}

// Add routes the datagrams of stream id on conn to deliver.
func (r *DatagramRoutes) Add(conn *quic.Conn, id quic.StreamID, deliver func([]byte)) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[routeKey]func([]byte){}
	}
	r.m[routeKey{conn, id}] = deliver
	r.mu.Unlock()
}

// Remove ends the route of stream id on conn.
func (r *DatagramRoutes) Remove(conn *quic.Conn, id quic.StreamID) {
	r.mu.Lock()
	delete(r.m, routeKey{conn, id})
	r.mu.Unlock()
}

// Dispatch receives conn's datagrams and hands each to its flow until the
// connection ends. Malformed or unrouted datagrams are dropped, as a UDP
// stack drops what no socket wants.
func (r *DatagramRoutes) Dispatch(ctx context.Context, conn *quic.Conn) {
	for {
		b, err := conn.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		id, payload, err := ParseDatagram(b)
		if err != nil {
			continue
		}
		r.mu.Lock()
		deliver := r.m[routeKey{conn, id}]
		r.mu.Unlock()
		if deliver != nil {
			deliver(payload)
		}
	}
}
