package sim

import (
	"fmt"
	"math"
	"time"
)

// Application-limited sources. Each drives one connection from a start
// time on, writing what a real application would write when it would
// write it, so that the sender is often idle (the case where schedulers
// matter). All are deterministic: no randomness, times from the
// simulator.

// CBR writes a constant bit rate on one stream: Bytes (default one chunk's
// payload) every Bytes·8/RateBps, from Start until Stop (Stop 0: never).
type CBR struct {
	RateBps     float64
	Bytes       int64
	Start, Stop time.Duration
	Opts        StreamOpts
}

// Run opens the stream at Start and schedules the writes; it returns the
// stream (opened at Start, so nil until then) through got when not nil.
func (a CBR) Run(c *Conn, got func(*Stream)) error {
	if !(a.RateBps > 0) || math.IsInf(a.RateBps, 0) {
		return fmt.Errorf("cbr rate: %v must be a positive bit rate", a.RateBps)
	}
	if a.Bytes == 0 {
		a.Bytes = int64(c.Payload())
	}
	if a.Bytes < 0 || (a.Stop > 0 && a.Stop <= a.Start) {
		return fmt.Errorf("cbr: bytes %d must be > 0 and stop %v after start %v", a.Bytes, a.Stop, a.Start)
	}
	if err := c.CheckStreamOpts(a.Opts); err != nil {
		return fmt.Errorf("cbr: %w", err)
	}
	every := time.Duration(float64(a.Bytes) * 8 / a.RateBps * float64(time.Second))
	if every <= 0 {
		return fmt.Errorf("cbr: %d bytes at %v bit/s is below the clock's resolution", a.Bytes, a.RateBps)
	}
	c.sim.At(a.Start, func() {
		st, err := c.OpenStream(0, a.Opts)
		if err != nil {
			panic(fmt.Sprintf("sim: cbr: %v", err)) // checked above
		}
		if got != nil {
			got(st)
		}
		var tick func()
		tick = func() {
			now := c.sim.now
			if a.Stop > 0 && now >= a.Stop {
				st.Close()
				return
			}
			st.Write(a.Bytes)
			c.sim.At(now+every, tick)
		}
		tick()
	})
	return nil
}

// Video is frame-based video: one stream per frame, released every 1/FPS
// from Start, each due Deadline after its release. A group of pictures of
// GOP frames starts with an I frame IScale times the size of the P frames
// that follow; the sizes keep the mean rate at BitrateBps.
type Video struct {
	FPS        float64
	BitrateBps float64
	Frames     int
	GOP        int     // default 1 (every frame the same size)
	IScale     float64 // default 1
	Start      time.Duration
	Deadline   time.Duration // per frame, after its release
	Opts       StreamOpts    // every frame's options (Deadline is set per frame)
	// Frame, when set, adjusts frame k's options before it is opened: the
	// per-frame decision of an application (QC-MAB's access network as
	// Opts.Pinned/Path, a priority, dropping late frames).
	Frame func(k int, o *StreamOpts)
	// OnFrame, when set, gets each frame's stream once opened.
	OnFrame func(k int, st *Stream)
}

// FrameBytes is frame k's size in bytes.
func (a Video) FrameBytes(k int) int64 {
	gop, is := max(a.GOP, 1), a.IScale
	if is <= 0 {
		is = 1
	}
	p := a.BitrateBps / 8 / a.FPS * float64(gop) / (is + float64(gop-1))
	if k%gop == 0 {
		return int64(math.Ceil(is * p))
	}
	return int64(math.Ceil(p))
}

// Run schedules the frames.
func (a Video) Run(c *Conn) error {
	switch {
	case !(a.FPS > 0 && a.FPS <= 1000):
		return fmt.Errorf("video fps: %v is outside (0, 1000]", a.FPS)
	case !(a.BitrateBps > 0) || math.IsInf(a.BitrateBps, 0):
		return fmt.Errorf("video bitrate: %v must be a positive bit rate", a.BitrateBps)
	case a.Frames < 1:
		return fmt.Errorf("video frames: %d must be ≥ 1", a.Frames)
	case a.Deadline <= 0:
		return fmt.Errorf("video deadline: %v must be > 0", a.Deadline)
	case a.GOP < 0 || a.IScale < 0:
		return fmt.Errorf("video gop %d and i_scale %v must be ≥ 0", a.GOP, a.IScale)
	}
	if err := c.CheckStreamOpts(a.Opts); err != nil {
		return fmt.Errorf("video: %w", err)
	}
	period := float64(time.Second) / a.FPS
	for k := 0; k < a.Frames; k++ {
		at := a.Start + time.Duration(float64(k)*period)
		c.sim.At(at, func() {
			o := a.Opts
			o.Deadline = at + a.Deadline
			if a.Frame != nil {
				a.Frame(k, &o)
			}
			st, err := c.OpenStream(a.FrameBytes(k), o)
			if err != nil {
				panic(fmt.Sprintf("sim: video frame %d: %v", k, err))
			}
			if a.OnFrame != nil {
				a.OnFrame(k, st)
			}
		})
	}
	return nil
}

// ReqResp is a closed-loop request/response client: it sends a request,
// the server answers with a RespBytes stream, and Think after the answer
// is complete the client sends the next one, Requests times. Requests are
// small and travel on the reverse direction, which the model does not
// carry as data: a request reaches the server after ReqDelay (0: the
// lowest one-way propagation delay of the connection's reverse paths).
type ReqResp struct {
	Requests  int
	RespBytes int64
	Think     time.Duration
	Start     time.Duration
	ReqDelay  time.Duration
	Opts      StreamOpts
	// OnResponse, when set, gets each response's completion: request k was
	// issued at issued and the whole response delivered at e.At.
	OnResponse func(k int, issued time.Duration, e StreamEvent)
}

// Run starts the first request at Start.
func (a ReqResp) Run(c *Conn) error {
	if a.Requests < 1 || a.RespBytes <= 0 || a.Think < 0 || a.ReqDelay < 0 {
		return fmt.Errorf("reqresp: requests %d and resp_bytes %d must be ≥ 1, think %v and req_delay %v ≥ 0",
			a.Requests, a.RespBytes, a.Think, a.ReqDelay)
	}
	if err := c.CheckStreamOpts(a.Opts); err != nil {
		return fmt.Errorf("reqresp: %w", err)
	}
	if a.ReqDelay == 0 {
		a.ReqDelay = time.Duration(math.MaxInt64)
		for _, rp := range c.recv.paths {
			a.ReqDelay = min(a.ReqDelay, rp.revDelay)
		}
	}
	var issue func(k int)
	issue = func(k int) {
		issued := c.sim.now
		c.sim.At(issued+a.ReqDelay, func() {
			st, err := c.OpenStream(a.RespBytes, a.Opts)
			if err != nil {
				panic(fmt.Sprintf("sim: response %d: %v", k, err))
			}
			st.OnDone = func(e StreamEvent) {
				if e.Kind != StreamDelivered {
					return
				}
				if a.OnResponse != nil {
					a.OnResponse(k, issued, e)
				}
				if k+1 < a.Requests {
					c.sim.At(e.At+a.Think, func() { issue(k + 1) })
				}
			}
		})
	}
	c.sim.At(a.Start, func() { issue(0) })
	return nil
}
