package runner

import (
	"fmt"
	"time"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/sim"
)

// startStreams drives conn with one of the stream workloads (streams,
// video, cbr, reqresp; sim/README.md "Workloads") from start on and calls
// done when the flow completes.
func (s *Spec) startStreams(sm *sim.Sim, conn *sim.Conn, fr *FlowResult, start time.Duration, rc *recorder, done func()) {
	a := s.App
	payload := conn.Payload()
	rc.app = a.Kind != "streams"
	r := conn.Receiver()
	r.OnDeliver = func(d sim.Delivery) { rc.deliver(d, payload) }
	finish := func(at time.Duration) {
		fr.FCTS = (at - start).Seconds()
		done()
	}
	open := func(bytes int64, o sim.StreamOpts) *sim.Stream {
		st, err := conn.OpenStream(bytes, o)
		if err != nil { // the spec's options were validated
			panic(fmt.Sprintf("exp: %v", err))
		}
		return st
	}
	switch a.Kind {
	case "streams":
		bytes := int64(a.SizeMB * 1e6)
		fr.Bytes = int64(a.Streams) * bytes
		left := a.Streams
		r.OnStream = func(e sim.StreamEvent) {
			rc.stream(e)
			if e.Kind == sim.StreamDelivered {
				if left--; left == 0 {
					finish(e.At)
				}
			}
		}
		sm.At(start, func() {
			for i := 0; i < a.Streams; i++ {
				open(bytes, sim.StreamOpts{})
			}
		})
	case "video":
		// Frames are urgency 0; the background bulk stream, if any, 1.
		frame := map[int]bool{}
		left := a.Frames
		r.OnStream = func(e sim.StreamEvent) {
			if !frame[e.Stream] {
				return
			}
			rc.stream(e)
			// A frame is decided when delivered in time or when its
			// deadline passes (a late delivery after that is not counted again).
			if e.Kind == sim.StreamMissed || (e.Kind == sim.StreamDelivered && !e.Late) {
				if left--; left == 0 {
					finish(e.At)
				}
			}
		}
		v := sim.Video{FPS: a.FPS, BitrateBps: a.BitrateMbps * 1e6, Frames: a.Frames, GOP: a.GOP, IScale: a.IScale,
			Start: start, Deadline: time.Duration(a.DeadlineMs * float64(time.Millisecond)),
			Opts:    sim.StreamOpts{DropLate: a.DropLate},
			OnFrame: func(k int, st *sim.Stream) { frame[st.ID()] = true; fr.Bytes += frameBytes(a, k) }}
		if err := v.Run(conn); err != nil {
			panic(fmt.Sprintf("exp: %v", err))
		}
		if a.BackgroundMB > 0 {
			sm.At(start, func() { open(int64(a.BackgroundMB*1e6), sim.StreamOpts{Priority: 1}) })
		}
	case "cbr":
		fr.Bytes = int64(a.RateMbps * 1e6 / 8 * a.CBRS)
		r.OnStream = func(e sim.StreamEvent) {
			rc.stream(e)
			if e.Kind == sim.StreamDelivered {
				finish(e.At)
			}
		}
		c := sim.CBR{RateBps: a.RateMbps * 1e6, Start: start, Stop: start + time.Duration(a.CBRS*float64(time.Second))}
		if err := c.Run(conn, nil); err != nil {
			panic(fmt.Sprintf("exp: %v", err))
		}
	case "reqresp":
		resp := int64(a.RespKB * 1e3)
		fr.Bytes = int64(a.Requests) * resp
		q := sim.ReqResp{Requests: a.Requests, RespBytes: resp, Think: time.Duration(a.ThinkMs * float64(time.Millisecond)), Start: start,
			OnResponse: func(k int, issued time.Duration, e sim.StreamEvent) {
				rc.r.StreamMs = append(rc.r.StreamMs, float32((e.At-issued).Seconds()*1e3))
				if k == a.Requests-1 {
					finish(e.At)
				}
			}}
		if err := q.Run(conn); err != nil {
			panic(fmt.Sprintf("exp: %v", err))
		}
	}
}

// frameBytes is frame k's size for the spec's video.
func frameBytes(a App, k int) int64 {
	return sim.Video{FPS: a.FPS, BitrateBps: a.BitrateMbps * 1e6, GOP: a.GOP, IScale: a.IScale}.FrameBytes(k)
}

// describe is the application's one-line description for reports (bulk
// is the caller's default).
func (a App) describe(bulk string) string {
	switch a.Kind {
	case "dash":
		return fmt.Sprintf("DASH-like: %d segments of %g s at %g Mbit/s, deadline %g s after release", a.Segments, a.SegmentS, a.BitrateMbps, a.DeadlineS)
	case "streams":
		return fmt.Sprintf("%d parallel streams of %g MB", a.Streams, a.SizeMB)
	case "video":
		d := fmt.Sprintf("video: %d frames at %g fps, %g Mbit/s (GOP %d, I frame ×%g), deadline %g ms after release", a.Frames, a.FPS, a.BitrateMbps, a.GOP, a.IScale, a.DeadlineMs)
		if a.DropLate {
			d += ", late frames dropped"
		}
		if a.BackgroundMB > 0 {
			d += fmt.Sprintf(", with a %g MB background download", a.BackgroundMB)
		}
		return d
	case "cbr":
		return fmt.Sprintf("constant bit rate %g Mbit/s for %g s", a.RateMbps, a.CBRS)
	case "reqresp":
		return fmt.Sprintf("request/response: %d responses of %g kB, think time %g ms", a.Requests, a.RespKB, a.ThinkMs)
	}
	return bulk
}

// streamTable is the stream workloads' metrics of sums.
func streamTable(sums []Summary) results.Table {
	t := results.Table{Header: []string{"variant", "paths", "stream time p50 / p90 (ms)", "deadlines missed", "app delay p90 (ms)", "FCT p50 (s)"},
		Note: "Stream time: a frame's delay from its release, a response's time from its request, a stream's completion time from its opening. " +
			"App delay: the application's write to in-order delivery, per packet."}
	for _, x := range sums {
		paths := "all"
		if x.Paths > 0 {
			paths = fmt.Sprint(x.Paths)
		}
		miss := "–"
		if x.Deadlines > 0 {
			miss = fmt.Sprintf("%.1f %% of %d", 100*x.DeadlineMiss, x.Deadlines)
		}
		t.Rows = append(t.Rows, []string{x.Label, paths, fmt.Sprintf("%.1f / %.1f", x.StreamP50Ms, x.StreamP90Ms), miss,
			fmt.Sprintf("%.1f", x.AppDelayP90Ms), fmt.Sprintf("%.3f", x.FCTP50S)})
	}
	return t
}
