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

// ReplayBytes is the replay buffer of a tunnel on each side, and the QUIC
// stream receive window each side grants (see above).
const ReplayBytes = 2 << 20

// StreamWindow is the QUIC stream receive window both sides grant: with
// the reader's buffers it stays below ReplayBytes.
const StreamWindow = 1 << 20

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
