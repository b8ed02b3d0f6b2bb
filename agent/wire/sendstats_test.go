package wire

import (
	"testing"
	"time"
)

func TestParseSendStats(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SendStats
		bad  bool
	}{
		{in: "1000 12 31000 30000", want: SendStats{Sent: 1000, Lost: 12, SRTT: 31 * time.Millisecond, MinRTT: 30 * time.Millisecond}},
		{in: "0 0 0 0"},
		{in: "5 6 1 1", bad: true},  // more lost than sent
		{in: "1 2 3", bad: true},    // a field short
		{in: "1 0 -3 1", bad: true}, // not a count
		{in: "1 0 999999999999 1", want: SendStats{Sent: 1, SRTT: maxStatsRTT, MinRTT: time.Microsecond}},
	} {
		got, err := ParseSendStats(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseSendStats(%q) = %+v, %v; want %+v, bad %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
