package pcm

import (
	"testing"

	"github.com/quic-go/quic-go/qlog"
)

// FuzzStreamEnds checks streamEnds' gap arithmetic against a plain model,
// a bitmap of the offsets received of one request stream: each frame
// counts exactly the offsets no frame brought before, and the stream
// leaves the window exactly when its FIN has come and every offset below
// the highest one has. The input is a list of frames, three bytes each
// (offset, length, a FIN bit in the length's top bit), offsets within
// 256 bytes, so that fragments and gaps stay under maxHoles and the model
// stays exact.
func FuzzStreamEnds(f *testing.F) {
	f.Add([]byte{100, 50, 0, 0, 100, 0})                          // a gap filled late
	f.Add([]byte{0, 10, 0, 30, 0x80 | 10, 0, 10, 20, 0})          // an empty-ish FIN past a gap
	f.Add([]byte{50, 10, 0, 60, 5, 0, 0, 0x80 | 70, 0, 20, 1, 0}) // a frame inside a gap
	f.Fuzz(func(t *testing.T, in []byte) {
		var s streamEnds
		var got [256 + 128]bool
		end, fin, ended := 0, false, false
		for i := 0; i+2 < len(in) && i < 3*maxHoles/2; i += 3 {
			off, n, isFin := int(in[i]), int(in[i+1]&0x7f), in[i+1]&0x80 != 0
			want := int64(0)
			for o := off; o < off+n; o++ {
				if !got[o] {
					got[o], want = true, want+1
				}
			}
			if ended { // a stream that ended counts nothing more
				want = 0
			}
			end, fin = max(end, off+n), fin || isFin
			if c := s.fresh([]qlog.Frame{{Frame: &qlog.StreamFrame{Offset: int64(off), Length: int64(n), Fin: isFin}}}); c != want {
				t.Fatalf("frame %d (offset %d, %d bytes): %d new bytes, want %d", i/3, off, n, c, want)
			}
			whole := true
			for o := range end {
				whole = whole && got[o]
			}
			ended = ended || fin && whole
			if left := s.below > 0; left != ended {
				t.Fatalf("frame %d: left the window %v, want %v (FIN %v, every offset below %d %v)", i/3, left, ended, fin, end, whole)
			}
		}
	})
}
