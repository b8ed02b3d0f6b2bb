// Package uploadreplay keeps the bytes of a request body that ct-client has
// sent, so that a request whose path failed while its body was still going
// out can be sent again from its first byte on another path. It stands
// apart from the client because it is one bounded buffer with its own
// budget rule and nothing of the client's state.
package uploadreplay

import (
	"sync/atomic"

	"github.com/hetquic/hetquic/agent/idlebody"
)

// A request that is not a GET cannot go on from where it
// stopped, and its app cannot send its body again, so before this a
// request body cut by a path failure (every path down for 3 s, say) was a
// 502. ct-client keeps the bytes of a body it has read, up to
// PerRequest per request and Total for all
// requests at once (ct-client's memory for it is bounded), and sends the
// request again on another path, from its first byte, when its path
// failed while the body was still going out. Only then: a body not all
// sent never reached the app-server whole (ct-server passes a cut body on
// cut, never complete), so the app-server never saw the request and a
// second one is not a duplicate. A request whose body went out whole and
// whose answer was lost is not sent again (it may have taken effect).
const (
	PerRequest = 8 << 20
	Total      = 64 << 20
)

// Pool is the bytes all request bodies keep for a replay; its zero value
// is empty.
type Pool struct{ used atomic.Int64 }

func (p *Pool) take(n int64) bool {
	if p.used.Add(n) > Total {
		p.used.Add(-n)
		return false
	}
	return true
}

func (p *Pool) give(n int64) { p.used.Add(-n) }

// Body is the app's request body as attempts read it: the first attempt
// reads the app's body and keeps what it read; a later one reads what was
// kept, then the rest of the app's body.
type Body struct {
	src  *idlebody.Body
	pool *Pool
	buf  []byte // the body's bytes read so far (nil once over)
	pos  int    // the current attempt's position in buf
	over bool   // more than the budget read: no replay
}

func (b *Body) Read(p []byte) (int, error) {
	if b.pos < len(b.buf) {
		n := copy(p, b.buf[b.pos:])
		b.pos += n
		return n, nil
	}
	n, err := b.src.Read(p)
	if n > 0 && !b.over {
		if len(b.buf)+n > PerRequest || !b.pool.take(int64(n)) {
			b.Drop()
		} else {
			b.buf = append(b.buf, p[:n]...)
			b.pos = len(b.buf)
		}
	}
	return n, err
}

// Close does not close the app's body: each attempt's request writer
// closes its body when it ends, and a later attempt reads on (net/http
// closes the app's body after the handler).
func (b *Body) Close() error { return nil }

// Drop gives up the replay and its bytes.
func (b *Body) Drop() {
	b.pool.give(int64(len(b.buf)))
	b.buf, b.pos, b.over = nil, 0, true
}

// Rewind makes the next attempt send the body from its first byte; false
// when the body outgrew the budget.
func (b *Body) Rewind() bool {
	if b.over {
		return false
	}
	b.pos = 0
	b.src.Resume()
	return true
}

// New returns src as attempts read it, keeping its bytes in pool's budget.
func New(src *idlebody.Body, pool *Pool) *Body { return &Body{src: src, pool: pool} }
