package udprelay

import (
	"context"
	"testing"
	"time"

	"github.com/hetquic/hetquic/emu"
)

// BenchmarkRelayForward reports the relay's delivered packets/s per path and
// direction with no impairment (1200-byte packets over loopback), for a load
// generator that sends one datagram per message ("mmsg") and one that sends
// with GSO ("gso"). b.N is ignored beyond choosing the duration: forwarding
// speed is a rate.
func BenchmarkRelayForward(b *testing.B) {
	for _, load := range []struct {
		name string
		gso  bool
	}{{"mmsg", false}, {"gso", true}} {
		for _, d := range []emu.Dir{emu.Up, emu.Down} {
			b.Run(load.name+"/"+d.String(), func(b *testing.B) {
				dur := time.Duration(b.N) * 5 * time.Microsecond
				dur = min(max(dur, 200*time.Millisecond), 3*time.Second)
				r, err := MeasureForward(context.Background(), d, 1200, dur, Load{GSO: load.gso})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.PacketsPS, "pkts/s")
				b.ReportMetric(float64(r.Received)/float64(r.Sent), "delivered/sent")
			})
		}
	}
}
