package sim

import "time"

// quic-go's receive-window defaults (v0.65.0, internal/protocol): a stream
// starts at 512 KiB and the connection at 1.5 times that; auto-tuning
// grows them to at most 6 MiB (DefaultStreamWindow) and 15 MiB.
const (
	quicgoInitialStreamWindow = 512 << 10
	quicgoInitialConnWindow   = 768 << 10
	quicgoMaxConnWindow       = 15 << 20
	// windowUpdateThreshold: quic-go sends a window update once this share
	// of the window is consumed (protocol.WindowUpdateThreshold).
	windowUpdateThreshold = 0.25
	// connWindowMultiplier keeps the connection window at least this many
	// stream windows when a stream's window grows
	// (protocol.ConnectionFlowControlMultiplier).
	connWindowMultiplier = 1.5
)

// fcWindow is the receiving side of one flow-control limit (a stream's or
// the connection's). Without auto-tuning the limit follows every read
// (read + size, advertised in each ACK). With it, it follows quic-go's
// baseFlowController: the limit moves only when at most 3/4 of the window
// is left, and the window doubles (up to max) when more than half of it
// was read within 4·fraction·SRTT of the epoch's start (fraction = share
// of the window read in the epoch), i.e. when the window, not the
// sender, limits the transfer.
type fcWindow struct {
	auto            bool
	size, max       int64 // window, its auto-tuning cap
	limit           int64 // advertised: the highest offset the sender may reach
	read            int64 // bytes consumed by the application
	epochAt         time.Duration
	epochRead       int64
	epochStartedYet bool
}

func newFCWindow(size, maxSize int64, auto bool) fcWindow {
	return fcWindow{auto: auto, size: size, max: max(size, maxSize), limit: size}
}

// onRead records n bytes consumed at now; srtt is the connection's
// smoothed RTT (0: no sample yet, no tuning). It reports whether the
// window size grew.
func (w *fcWindow) onRead(n int64, now, srtt time.Duration) bool {
	if !w.auto {
		w.read += n
		w.limit = w.read + w.size
		return false
	}
	if !w.epochStartedYet {
		// quic-go starts the first epoch at the first read, as if it had
		// just sent a window update.
		w.epochStartedYet, w.epochAt, w.epochRead = true, now, 0
	}
	w.read += n
	if float64(w.limit-w.read) > float64(w.size)*(1-windowUpdateThreshold) {
		return false
	}
	grew := w.adjust(now, srtt)
	w.limit = w.read + w.size
	return grew
}

// adjust is quic-go's maybeAdjustWindowSize.
func (w *fcWindow) adjust(now, srtt time.Duration) bool {
	inEpoch := w.read - w.epochRead
	if inEpoch <= w.size/2 || srtt == 0 {
		return false
	}
	fraction := float64(inEpoch) / float64(w.size)
	grew := false
	if now-w.epochAt < time.Duration(4*fraction*float64(srtt)) {
		if n := min(2*w.size, w.max); n > w.size {
			w.size, grew = n, true
		}
	}
	w.epochAt, w.epochRead = now, w.read
	return grew
}

// ensure raises the window to at least size (capped by max), as quic-go's
// connection controller does when a stream window grows.
func (w *fcWindow) ensure(size int64, now time.Duration) {
	if size > w.size {
		w.size = min(size, w.max)
		w.epochAt, w.epochRead = now, w.read
	}
}
