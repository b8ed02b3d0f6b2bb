package wire

// HdrPiece marks a request for a piece of a striped download (ct-client's
// agent/stripe): its value is PieceNext or PieceInOrder. ct-server sends
// the response on a stream of RFC 9218 priority PiecePriority and removes
// the header before the request goes upstream. ct-client sends it only
// to a ct-server that advertised HdrPieceOrder.
//
// Why: a path's pieces are streams of one QUIC connection, which quic-go
// sends round-robin by default, so the bytes the app needs next (the
// original response's rest, moved to a faster path, and the piece after
// it) shared that path with every later piece asked beside them and came
// at a fraction of its rate while the later pieces finished early and
// waited in the reorder buffer (agent/DESIGN.md, "Pieces in order").
// Non-incremental streams of one urgency are sent by stream ID, in the
// order ct-client asked for them: each piece lands at its turn. PieceNext
// is one urgency above, ahead of the pieces asked before it.
const HdrPiece = "Ct-Piece"

// HdrPiece's values.
const (
	PieceInOrder = "order" // a piece: sent after the pieces asked before it on the connection
	PieceNext    = "next"  // bytes the app waits on now: sent before the other pieces
)

// pieceUrgency is the RFC 9218 urgency of a piece's response: that of a
// response without a Priority (3, quic-go's default too), so a piece
// shares its connection with other apps' responses as before (quic-go
// alternates between a level's incremental and non-incremental streams).
// PieceNext's is one more urgent, and bounded: it is at most the bytes of
// one piece or the original response's rest.
const pieceUrgency = 3

// PiecePriority is the RFC 9218 priority of the response to a request
// whose HdrPiece is v (always non-incremental); ok is false for a value
// that names none (the stream keeps quic-go's default).
func PiecePriority(v string) (urgency int8, ok bool) {
	switch v {
	case PieceInOrder:
		return pieceUrgency, true
	case PieceNext:
		return pieceUrgency - 1, true
	}
	return 0, false
}
