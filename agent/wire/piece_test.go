package wire

import "testing"

// TestPiecePriority: the next bytes the app needs are more urgent than
// a piece in order, which has the default urgency; other values name none.
func TestPiecePriority(t *testing.T) {
	for _, c := range []struct {
		v    string
		u    int8
		want bool
	}{
		{PieceInOrder, 3, true}, {PieceNext, 2, true}, {"", 0, false}, {"u=0", 0, false},
	} {
		if u, ok := PiecePriority(c.v); u != c.u || ok != c.want {
			t.Errorf("PiecePriority(%q) = %d, %v; want %d, %v", c.v, u, ok, c.u, c.want)
		}
	}
}
