package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestCBR: a 2 Mbit/s source over a 10 Mbit/s, 20 ms path is never
// queued: every chunk's application delay is about the one-way delay plus
// its serialisation, and the stream carries rate × duration.
func TestCBR(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{}, 1, 10, 20*time.Millisecond, 0)
	var log WorkloadLog
	log.Attach(c.Receiver())
	var st *Stream
	if err := (CBR{RateBps: 2e6, Start: time.Second, Stop: 3 * time.Second}).Run(c, func(x *Stream) { st = x }); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Minute, 0, nil)
	if st == nil || !st.Closed() {
		t.Fatal("stream not opened and closed")
	}
	want := 2e6 * 2 / 8 / float64(c.Payload())
	if got := float64(st.Written()); math.Abs(got-want) > 1 {
		t.Errorf("%v chunks written, want %.0f", got, want)
	}
	hi := slices.Max(log.AppDelayMs)
	if lo := slices.Min(log.AppDelayMs); lo < 20 || hi > 20+2*1.2+1 {
		t.Errorf("application delay in [%v, %v] ms, want about 21.2 ms", lo, hi)
	}
	if len(log.Streams) != 1 {
		t.Errorf("%d streams delivered, want 1", len(log.Streams))
	}
	if err := (CBR{RateBps: 0}).Run(c, nil); err == nil {
		t.Error("rate 0 accepted")
	}
}

// TestVideo: frame sizes keep the mean rate with a larger I frame, and a
// path slower than the video misses deadlines that a fast one meets.
func TestVideo(t *testing.T) {
	v := Video{FPS: 25, BitrateBps: 4e6, Frames: 50, GOP: 10, IScale: 5, Deadline: 150 * time.Millisecond}
	var sum int64
	for k := 0; k < 10; k++ {
		sum += v.FrameBytes(k)
	}
	if mean := float64(sum) * 8 / 10 * 25; math.Abs(mean-4e6) > 0.01*4e6 {
		t.Errorf("mean rate %v bit/s, want 4e6", mean)
	}
	if v.FrameBytes(0) < 4*v.FrameBytes(1) {
		t.Errorf("I frame %d B, P frame %d B: want I ≈ 5×P", v.FrameBytes(0), v.FrameBytes(1))
	}
	miss := func(mbps float64) float64 {
		s, c := streamsConn(t, ConnConfig{}, 1, mbps, 20*time.Millisecond, 0)
		var log WorkloadLog
		log.Attach(c.Receiver())
		if err := v.Run(c); err != nil {
			t.Fatal(err)
		}
		s.Run(time.Minute, 0, nil)
		if log.Deadlines != v.Frames {
			t.Fatalf("%d deadlines decided, want %d", log.Deadlines, v.Frames)
		}
		return log.MissRatio()
	}
	if fast, slow := miss(50), miss(3); fast != 0 || slow < 0.5 {
		t.Errorf("miss ratio %v at 50 Mbit/s (want 0), %v at 3 Mbit/s (want most)", fast, slow)
	}
	if err := (Video{FPS: 0}).Run(nil); err == nil {
		t.Error("fps 0 accepted")
	}
}

// TestReqResp: each response completes about one request delay plus one
// RTT plus its transfer after it was requested, and the next request
// follows the think time later.
func TestReqResp(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{}, 1, 10, 20*time.Millisecond, 0)
	var issued, done []time.Duration
	a := ReqResp{Requests: 5, RespBytes: 8 * 1448, Think: 500 * time.Millisecond,
		OnResponse: func(k int, at time.Duration, e StreamEvent) { issued, done = append(issued, at), append(done, e.At) }}
	if err := a.Run(c); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Minute, 0, nil)
	if len(done) != 5 {
		t.Fatalf("%d responses, want 5", len(done))
	}
	for k := range done {
		rt := done[k] - issued[k]
		// request 20 ms + response 20 ms + 8 packets at 1.2 ms (the initial window holds them)
		if rt < 49*time.Millisecond || rt > 55*time.Millisecond {
			t.Errorf("response %d took %v, want about 50 ms", k, rt)
		}
		if k > 0 && issued[k] != done[k-1]+a.Think {
			t.Errorf("request %d issued at %v, want %v", k, issued[k], done[k-1]+a.Think)
		}
	}
}
