package agent

import (
	"math/bits"
	"sync"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// A striped download fetches each piece into a buffer of its own size,
// which the app's writes then drain (stripe.Run.Deliver). Allocated
// fresh, the buffers came to 1.3 × every striped byte in allocations,
// and the runtime zeroed each one (and faulted its pages in) before the
// piece's bytes overwrote it: 4 % of BenchmarkStripeThroughput's CPU,
// and the garbage they left ran the collector for the whole process.
// pieceBufs keeps the buffers the stripe hands back (stripe.Host.Release)
// for the next pieces, by size class.
//
// A class is a size with three significant bits (2^k × 4/4, 5/4, 6/4 or
// 7/4): a piece gets a buffer at most 1.25 × its size, and pieces of
// nearby sizes (stripesched.PieceSize moves with the path's rate) share
// a class. A sync.Pool per class drops what the collector finds unused
// for two cycles, so an idle ct-client does not keep the last stripe's
// buffers.
var pieceBufs [pieceClasses]sync.Pool

// maxPooledPiece is the largest piece whose buffer is pooled:
// stripesched.MaxPiece; a larger one (an original's remainder fetched
// again, stripe.Run.reinjectPrefix) is rare and allocated as before.
const maxPooledPiece = stripesched.MaxPiece

// pieceClasses covers every class up to maxPooledPiece's (79 for 4 MiB:
// TestPieceClass).
const pieceClasses = 80

// pieceClass is n's size class and that class's size (≥ n); ok is false
// for a size not pooled (under 8 bytes or over maxPooledPiece).
func pieceClass(n int) (class, size int, ok bool) {
	if n < 8 || n > maxPooledPiece {
		return 0, n, false
	}
	k := bits.Len(uint(n-1)) - 3 // the three bits of n-1 above k are 4..7
	m := (n-1)>>k + 1            // 5..8: n-1 rounded up at bit k, in units of 2^k
	return 4*k + m - 5, m << k, true
}

// newPieceBuf is an empty buffer for a piece of n bytes: one write of
// the piece's bytes never grows it.
func newPieceBuf(n int) []byte {
	class, size, ok := pieceClass(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if b, _ := pieceBufs[class].Get().(*[]byte); b != nil {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// releasePieceBuf keeps b for a later piece of its class; its caller
// no longer reads or writes it. A buffer not of a class (not from
// newPieceBuf) is left to the collector.
func releasePieceBuf(b []byte) {
	class, size, ok := pieceClass(cap(b))
	if !ok || size != cap(b) {
		return
	}
	b = b[:0]
	pieceBufs[class].Put(&b)
}
