package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HdrSendStats is set by ct-server on every forwarded response head: the
// sending statistics of the QUIC connection the response goes out on, as
// SendStats.String writes them. Only ct-server can see its own losses
// (quic-go counts lost packets on the sender's side), and ct-client needs
// them to tell a path whose random loss holds its congestion controller
// back (agent/lanes.go) from one that is merely full. ct-client removes the
// header before the app sees the response.
const HdrSendStats = "Ct-Send-Stats"

// SendStats are a connection's sending counters since it began, and its
// RTT estimates as the sender sees them.
type SendStats struct {
	Sent, Lost   uint64 // packets sent, and of them declared lost
	SRTT, MinRTT time.Duration
}

// String is the header value: "sent lost srtt_us minrtt_us".
func (s SendStats) String() string {
	return fmt.Sprintf("%d %d %d %d", s.Sent, s.Lost, s.SRTT.Microseconds(), s.MinRTT.Microseconds())
}

// maxStatsRTT bounds the RTTs a header may carry: beyond a minute the
// value is not an RTT, and the bound keeps the µs → Duration product from
// overflowing.
const maxStatsRTT = time.Minute

// ParseSendStats parses a HdrSendStats value.
func ParseSendStats(v string) (SendStats, error) {
	f := strings.Fields(v)
	if len(f) != 4 {
		return SendStats{}, fmt.Errorf("%s %q: want 4 numbers", HdrSendStats, v)
	}
	var n [4]uint64
	for i, s := range f {
		x, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return SendStats{}, fmt.Errorf("%s %q: field %d: not a count", HdrSendStats, v, i+1)
		}
		n[i] = x
	}
	st := SendStats{Sent: n[0], Lost: n[1], SRTT: time.Duration(min(n[2], uint64(maxStatsRTT.Microseconds()))) * time.Microsecond,
		MinRTT: time.Duration(min(n[3], uint64(maxStatsRTT.Microseconds()))) * time.Microsecond}
	if st.Lost > st.Sent {
		return SendStats{}, fmt.Errorf("%s %q: more packets lost than sent", HdrSendStats, v)
	}
	return st, nil
}
