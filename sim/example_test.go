package sim_test

import (
	"fmt"
	"time"

	"github.com/hetquic/hetquic/sim"
	"github.com/hetquic/hetquic/sim/sched"
)

// Two paths (Wi-Fi-like and LTE-like), a 25 fps video whose frames the
// application pins to a path, one bulk stream in the background under the
// scheduler, and the workload log read at the end.
func Example_workloads() {
	s := sim.New(1)
	path := func(name string, mbps float64, delay time.Duration) sim.PathSpec {
		p := sim.LinkParams{Delay: delay, RateBps: mbps * 1e6, QueuePkts: 100}
		return sim.PathSpec{Name: name,
			Fwd: []*sim.Link{sim.NewLink(s, name+"/down", p)}, Rev: []*sim.Link{sim.NewLink(s, name+"/up", p)}}
	}
	c, err := sim.NewConn(s, sim.ConnConfig{Scheduler: "minrtt", AutoTune: true},
		[]sim.PathSpec{path("wifi", 20, 10*time.Millisecond), path("lte", 10, 40*time.Millisecond)})
	if err != nil {
		panic(err)
	}
	var log sim.WorkloadLog
	log.Keep = func(d sim.Delivery) bool { return d.Stream > 0 } // the video's frames
	log.Attach(c.Receiver())

	// Background bulk data on stream 0, least urgent.
	s.At(0, func() { c.Write(2_000_000) })
	video := sim.Video{FPS: 25, BitrateBps: 4e6, Frames: 100, Deadline: 100 * time.Millisecond,
		Opts: sim.StreamOpts{Priority: -1}, // more urgent than the bulk stream
		// The per-frame decision: pin each frame to the path with the lower
		// smoothed RTT now (an agent would decide here).
		Frame: func(k int, o *sim.StreamOpts) {
			o.Pinned, o.Path = true, 0
			if c.PathView(1).SRTT < c.PathView(0).SRTT {
				o.Path = 1
			}
		}}
	if err := video.Run(c); err != nil {
		panic(err)
	}
	// A per-packet hook: any sched.Scheduler can replace the built-in one.
	c.SetScheduler(sched.Func("wifi-first", func(v *sched.View) sched.Decision {
		for _, i := range []int{0, 1} {
			if v.Pending > 0 && v.Paths[i].CanSend(v.PacketBytes) {
				return sched.Decision{Path: i, Chunk: sched.Head}
			}
		}
		return sched.Decision{Path: sched.Wait, Chunk: sched.Head}
	}))
	s.Run(time.Minute, 0, nil)

	fmt.Printf("frames decided %d, missed %d\n", log.Deadlines, log.Missed)
	fmt.Printf("all data acknowledged: %v\n", c.Done())
	// Output:
	// frames decided 100, missed 2
	// all data acknowledged: true
}
