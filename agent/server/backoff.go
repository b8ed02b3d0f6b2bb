package server

import (
	"container/list"
	"fmt"
	"net/netip"
	"time"
)

// loginBackoff slows token guessing without locking out the token's owner.
// ct-server checks a hello's token first, so a correct token always gets
// in, whatever its address did before (a guesser behind the same NAT or
// carrier NAT cannot lock a good client out: a good client was once
// refused for 73 s after ten wrong hellos beside it). Only failures are
// throttled: after LoginFreeFailures failed hellos from one source, the
// 401 of each further failure is held back until the source's block ends
// (a tarpit), and the block doubles with each failure from LoginFirstBlock
// to LoginMaxBlock. A sequential guesser thus gets one answer per block;
// a parallel one is bounded by the pre-auth caps and loginTarpitPerSource
// (beyond it, answers go at once). What makes guessing hopeless is not
// this table but identity.MinTokenBits: 2^96 guesses at a million a second take
// 2.5e15 years.
//
// Sources are IPv4 addresses and IPv6 /64 prefixes (one host's usual
// allotment: keying on full IPv6 addresses would give a guesser 2^64
// fresh keys). The table is a real LRU ordered by last failure, bounded by
// loginTableSize, and every operation is O(1): entries whose last failure
// is older than loginForget leave from the front as time passes. A full
// table evicts its least recently failed entry only if that entry's block
// has ended; a blocked entry is never evicted, so an attacker with many
// addresses cannot free a blocked one: while the table is full of blocked
// entries, new sources go untracked (counted in loginUntracked) and their
// guesses are bounded only by the pre-auth caps and the handshake cost —
// as a guesser's with loginTableSize fresh sources would be anyway.
// Guarded by Server.mu.
type loginBackoff struct {
	m         map[netip.Prefix]*list.Element
	lru       list.List // of *loginFailures, least recently failed first
	untracked int64     // failures not recorded because the table was full of blocked entries
}

// loginFailures is one source's record.
type loginFailures struct {
	src   netip.Prefix
	n     int       // failed hellos since the record began
	last  time.Time // last failure
	until time.Time // failures are held back until then
}

const (
	// LoginFreeFailures: a client with a stale token retries a few times
	// before its operator notices; those answers come at once.
	LoginFreeFailures = 3
	LoginFirstBlock   = time.Second
	// LoginMaxBlock caps the hold of a failure's answer: also the longest a
	// tarpitted connection stays open.
	LoginMaxBlock = time.Minute
	// loginForget: a source that failed nothing for this long starts over.
	loginForget = 15 * time.Minute
	// loginTableSize bounds the table: about 150 bytes an entry, 600 KB.
	loginTableSize = 4096
	// loginTarpitPerSource and loginTarpitTotal bound the connections held
	// open while their 401 waits (each about 70 KB, like a pre-auth one).
	loginTarpitPerSource = 4
	loginTarpitTotal     = 64
)

// loginKey is the back-off key of a source address.
func loginKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// expire drops the records whose last failure is older than loginForget:
// they are at the front.
func (b *loginBackoff) expire(now time.Time) {
	for e := b.lru.Front(); e != nil; e = b.lru.Front() {
		f := e.Value.(*loginFailures)
		if now.Sub(f.last) < loginForget {
			return
		}
		b.remove(e)
	}
}

func (b *loginBackoff) remove(e *list.Element) {
	delete(b.m, e.Value.(*loginFailures).src)
	b.lru.Remove(e)
}

// hold is how long the answer to a failed hello from src is held back now.
func (b *loginBackoff) hold(src netip.Addr, now time.Time) time.Duration {
	b.expire(now)
	if e := b.m[loginKey(src)]; e != nil {
		return max(e.Value.(*loginFailures).until.Sub(now), 0)
	}
	return 0
}

// fail records a failed hello from src and returns its record (nil when
// the table is full of blocked entries).
func (b *loginBackoff) fail(src netip.Addr, now time.Time) *loginFailures {
	b.expire(now)
	if b.m == nil {
		b.m = map[netip.Prefix]*list.Element{}
	}
	k := loginKey(src)
	e := b.m[k]
	if e == nil {
		if b.lru.Len() >= loginTableSize {
			front := b.lru.Front()
			if now.Before(front.Value.(*loginFailures).until) {
				b.untracked++
				return nil
			}
			b.remove(front)
		}
		e = b.lru.PushBack(&loginFailures{src: k})
		b.m[k] = e
	}
	b.lru.MoveToBack(e)
	f := e.Value.(*loginFailures)
	f.n++
	f.last = now
	if f.n > LoginFreeFailures {
		block := LoginFirstBlock << min(f.n-LoginFreeFailures-1, 10)
		f.until = now.Add(min(block, LoginMaxBlock))
	}
	return f
}

// refusal is the reason a refused hello's client logs (Ct-Error): what
// was wrong and, once its source is backing off, why the answer came late.
func (f *loginFailures) refusal(reason string, held time.Duration) string {
	if f == nil || f.n <= LoginFreeFailures {
		return reason
	}
	return fmt.Sprintf("%s (login back-off: %d failed hellos from %s; this answer was held %s)", reason, f.n, f.src, held.Round(time.Millisecond))
}
