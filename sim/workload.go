package sim

import "time"

// WorkloadLog collects what an application-limited workload is judged by:
// per-chunk delivery delay (first transmission → in-order delivery, the
// thesis's delivery delay), per-chunk application delay (write →
// delivery), reordering delay (arrival → delivery), and per-stream
// completion with deadlines (a frame delivered at t, or missed). It keeps
// raw samples; sim/runner turns them into quantiles.
type WorkloadLog struct {
	DelayMs, AppDelayMs, ReorderMs []float32
	// Streams are the StreamDelivered events in delivery order.
	Streams []StreamEvent
	// Deadlines counts streams opened with a deadline whose deadline has
	// come; Missed those not delivered by then.
	Deadlines, Missed int
	// Keep, when set, filters the chunks whose delays are recorded (e.g.
	// only a video's streams); nil records all.
	Keep func(d Delivery) bool
}

// Attach makes l record r's deliveries and stream events, after calling
// the handlers already installed.
func (l *WorkloadLog) Attach(r *ConnReceiver) {
	prevD, prevS := r.OnDeliver, r.OnStream
	r.OnDeliver = func(d Delivery) {
		if prevD != nil {
			prevD(d)
		}
		if l.Keep == nil || l.Keep(d) {
			l.DelayMs = append(l.DelayMs, ms(d.Delay))
			l.AppDelayMs = append(l.AppDelayMs, ms(d.AppDelay))
			l.ReorderMs = append(l.ReorderMs, ms(d.Reorder))
		}
	}
	r.OnStream = func(e StreamEvent) {
		if prevS != nil {
			prevS(e)
		}
		switch {
		case e.Kind == StreamDelivered:
			l.Streams = append(l.Streams, e)
			if e.Deadline > 0 && !e.Late {
				l.Deadlines++ // met: the deadline timer found it done and said nothing
			}
		case e.Kind == StreamMissed:
			l.Deadlines++
			l.Missed++
		}
	}
}

// MissRatio is Missed / Deadlines (0 without deadlines).
func (l *WorkloadLog) MissRatio() float64 {
	if l.Deadlines == 0 {
		return 0
	}
	return float64(l.Missed) / float64(l.Deadlines)
}

func ms(d time.Duration) float32 { return float32(d.Seconds() * 1e3) }
