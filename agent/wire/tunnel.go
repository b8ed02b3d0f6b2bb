package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Headers of a tunnel's resumption: see the package comment.
const (
	HdrSession    = "Ct-Session"
	HdrResumeDown = "Ct-Resume-Down"
	HdrResumeUp   = "Ct-Resume-Up"
)

// ReplayBytes is ct-client's replay buffer of a tunnel's bytes up (the
// app's): it covers the stream receive window ct-server grants
// (StreamWindow) and the reader's buffers (see the package comment).
const ReplayBytes = 2 << 20

// ReplayDownBytes is ct-server's replay buffer of a tunnel's bytes down:
// it covers the most a stream's window at ct-client grows to (DownWindow)
// with the same room for the reader's buffers as ReplayBytes. The buffer
// grows only as the tunnel sends, and ct-server reserves its bytes against
// the client's memory budget as it grows (server.TunnelCost): only a
// tunnel whose app reads faster than its window per round trip (the
// window grows only then) fills more than ReplayBytes of it.
const ReplayDownBytes = DownWindow + ReplayBytes - StreamWindow

// StreamWindow is the QUIC stream receive window ct-server grants (an
// upload, a tunnel's bytes up) and the one each stream of ct-client
// starts with: with the reader's buffers it stays below ReplayBytes.
const StreamWindow = 1 << 20

// DownWindow is the most a stream's receive window at ct-client grows to
// (quic-go's auto-tuning doubles it from StreamWindow while the app reads
// half a window in under about two round trips; an unread stream keeps
// StreamWindow). One stream moves at most its window per round trip, and
// the round trip includes the bottleneck's queue: ct-client's fixed 1 MiB
// held a download on a 100 Mbit/s path 120 ms away to 0.59 of its rate,
// and with 8 MiB the path at 200 ms, its queue filled to 460 ms, stalled
// for about a round trip every 1.5 s (0.81–0.89 of its rate; fake time,
// TestFarFastPathAloneReachesRate). 16 MiB covers 100 Mbit/s up to a
// 1.3 s round trip, queue included (a geostationary satellite's 600 ms
// and its queue), or 1 Gbit/s up to 130 ms. Its price is ReplayDownBytes,
// reserved only by tunnels whose bytes fill it.
const DownWindow = 16 << 20

// ParseResume reads a resume request's session id and the byte count
// ct-client has delivered (Ct-Session, Ct-Resume-Down).
func ParseResume(h http.Header) (id string, from int64, err error) {
	id = h.Get(HdrSession)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", 0, fmt.Errorf("%s %q: not a session id", HdrSession, id)
	}
	from, err = strconv.ParseInt(h.Get(HdrResumeDown), 10, 64)
	if err != nil || from < 0 {
		return "", 0, fmt.Errorf("%s %q: want a byte count", HdrResumeDown, h.Get(HdrResumeDown))
	}
	return id, from, nil
}

// ParseResumeUp reads ct-server's answer to a resume: how many of the
// app's bytes it has, which must lie in the replay buffer [low, high].
func ParseResumeUp(v string, low, high int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < low || n > high {
		return 0, fmt.Errorf("%s %q: outside the replay buffer %d..%d", HdrResumeUp, v, low, high)
	}
	return n, nil
}
