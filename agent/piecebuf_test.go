package agent

import (
	"testing"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestPieceClass: a class's size covers the piece by at most a quarter,
// classes grow with the size, and the largest pooled piece's class fits
// pieceBufs.
func TestPieceClass(t *testing.T) {
	for _, tc := range []struct {
		n, class, size int
		ok             bool
	}{
		{7, 0, 7, false},
		{8, 3, 8, true},
		{9, 4, 10, true},
		{1000, 31, 1024, true},
		{1024, 31, 1024, true},
		{1025, 32, 1280, true},
		{256 << 10, 63, 256 << 10, true},
		{256<<10 + 1, 64, 320 << 10, true},
		{stripesched.MaxPiece, pieceClasses - 1, stripesched.MaxPiece, true},
		{stripesched.MaxPiece + 1, 0, stripesched.MaxPiece + 1, false},
	} {
		class, size, ok := pieceClass(tc.n)
		if class != tc.class || size != tc.size || ok != tc.ok {
			t.Errorf("pieceClass(%d) = %d, %d, %v; want %d, %d, %v", tc.n, class, size, ok, tc.class, tc.size, tc.ok)
		}
	}
	prev := -1
	for n := 8; n <= maxPooledPiece; n += 1 + n/7 {
		class, size, _ := pieceClass(n)
		if size < n || 4*size > 5*n+4 || class < prev || class >= pieceClasses {
			t.Fatalf("pieceClass(%d) = %d, %d (previous class %d)", n, class, size, prev)
		}
		prev = class
	}
}

// TestPieceBufReuse: a released buffer serves a later piece of its
// class, empty; one whose capacity is not its class's size is not kept,
// so no piece gets a buffer short of its size. sync.Pool keeps a buffer
// put only most of the time (under -race it drops a quarter of them), so
// the reuse is tried until it happens.
func TestPieceBufReuse(t *testing.T) {
	b := newPieceBuf(300 << 10)
	if len(b) != 0 || cap(b) != 320<<10 {
		t.Fatalf("newPieceBuf(300 KiB): len %d cap %d, want 0, 320 KiB", len(b), cap(b))
	}
	reused := false
	for range 100 {
		first := &b[:1][0]
		releasePieceBuf(append(b, 1, 2, 3))
		b = newPieceBuf(310 << 10)
		if len(b) != 0 || cap(b) != 320<<10 {
			t.Fatalf("newPieceBuf(310 KiB) after a release: len %d cap %d, want 0, 320 KiB", len(b), cap(b))
		}
		if reused = &b[:1][0] == first; reused {
			break
		}
	}
	if !reused {
		t.Fatal("a released buffer never served the next piece of its class")
	}
	for range 100 {
		releasePieceBuf(make([]byte, 0, 300<<10)) // 300 KiB is not a class's size
		if c := newPieceBuf(310 << 10); cap(c) < 310<<10 {
			t.Fatalf("newPieceBuf(310 KiB): cap %d", cap(c))
		}
	}
}
