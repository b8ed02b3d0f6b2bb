package wire

// Headers of a tunnel's resumption: see the package comment.
const (
	HdrSession    = "Ct-Session"
	HdrResumeDown = "Ct-Resume-Down"
	HdrResumeUp   = "Ct-Resume-Up"
)

// ReplayBytes is the replay buffer of a tunnel on each side, and the QUIC
// stream receive window each side grants (see above).
const ReplayBytes = 2 << 20

// StreamWindow is the QUIC stream receive window both sides grant: with
// the reader's buffers it stays below ReplayBytes.
const StreamWindow = 1 << 20
