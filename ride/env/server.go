package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hetquic/hetquic/ride"
)

// ProtocolVersion names the env server protocol (docs/ride.md):
// newline-delimited JSON, one request and one response per line.
//
//	{"op":"spec"}                                        → {"protocol","obs_dim","paths","actions","videos","test_video","validation_video","obs_high"}
//	{"op":"reset","seed":S,"video":V,"frames":F,"start":K} → {"obs":[…],"info":{…}}
//	{"op":"step","action":A}                             → {"obs":[…],"reward":R,"terminated":T,"truncated":U,"info":{…}}
//	{"op":"close"}                                       → {"ok":true}, then the server exits
//
// A = −1 skips the tile, 0…paths−1 sends it on that path. Any bad request
// is answered {"error":"…"} (one line) and the server goes on.
const ProtocolVersion = "hetquic-ride-env/1"

// Request is one protocol line.
type Request struct {
	Op     string `json:"op"`
	Seed   uint64 `json:"seed"`
	Video  *int   `json:"video"`
	Frames int    `json:"frames"`
	Start  *int   `json:"start"`
	Action *int   `json:"action"`
}

// Response is one protocol line; fields unused by the op are omitted.
type Response struct {
	Error      string     `json:"error,omitempty"`
	OK         bool       `json:"ok,omitempty"`
	Obs        []float64  `json:"obs,omitempty"`
	Reward     *float64   `json:"reward,omitempty"`
	Terminated *bool      `json:"terminated,omitempty"`
	Truncated  *bool      `json:"truncated,omitempty"`
	Info       *StepInfo  `json:"info,omitempty"`
	Spec       *SpecReply `json:"spec,omitempty"`
}

// StepInfo is a step's info dict.
type StepInfo struct {
	Frame     int     `json:"frame"`
	Tile      int     `json:"tile"`
	Type      string  `json:"type"`
	Settled   float64 `json:"settled_reward"`
	SettledN  int     `json:"settled_n"`
	Predicted float64 `json:"predicted_reward"`
	SimTime   float64 `json:"sim_time_s"`
	Events    uint64  `json:"sim_events"`
}

// SpecReply describes the spaces.
type SpecReply struct {
	Protocol  string  `json:"protocol"`
	ObsDim    int     `json:"obs_dim"`
	ObsHigh   float64 `json:"obs_high"`
	Paths     int     `json:"paths"`
	Actions   []int   `json:"actions"`
	Videos    int     `json:"videos"`
	TestVideo int     `json:"test_video"`
	// ValidationVideo chooses among trained policies (never TestVideo).
	ValidationVideo int `json:"validation_video"`
}

// Server answers protocol requests with one episode at a time.
type Server struct {
	Base Config // template for reset (Seed, Video, Frames, Start are per request)
	e    *Env
}

// Serve reads requests from r and writes responses to w until close or
// EOF.
func (s *Server) Serve(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for sc.Scan() {
		resp, quit := s.Handle(sc.Bytes())
		if err := enc.Encode(resp); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if quit {
			return nil
		}
	}
	return sc.Err()
}

// Handle answers one request line; quit is set by close.
func (s *Server) Handle(line []byte) (resp Response, quit bool) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Response{Error: fmt.Sprintf("bad request: %v", err)}, false
	}
	switch req.Op {
	case "spec":
		paths := len(s.Base.Paths)
		if paths == 0 {
			paths = 2
		}
		acts := []int{ride.Skip}
		for m := 0; m < paths; m++ {
			acts = append(acts, m)
		}
		return Response{Spec: &SpecReply{Protocol: ProtocolVersion, ObsDim: ride.FeatureDim(paths), ObsHigh: 10,
			Paths: paths, Actions: acts, Videos: Videos, TestVideo: TestVideo, ValidationVideo: ValidationVideo}}, false
	case "reset":
		cfg := s.Base
		cfg.Seed, cfg.Frames, cfg.Start = req.Seed, req.Frames, -1
		if req.Video != nil {
			cfg.Video = *req.Video
		}
		if req.Start != nil {
			cfg.Start = *req.Start
		}
		if req.Frames < 0 {
			return Response{Error: fmt.Sprintf("reset: frames %d must be ≥ 0 (0: the whole video)", req.Frames)}, false
		}
		e, err := New(cfg)
		if err != nil {
			return Response{Error: "reset: " + err.Error()}, false
		}
		s.e = e
		return Response{Obs: s.obs(), Info: s.info(Info{})}, false
	case "step":
		if s.e == nil {
			return Response{Error: "step: no episode, send reset first"}, false
		}
		if req.Action == nil {
			return Response{Error: `step: missing "action"`}, false
		}
		r, info, err := s.e.Step(*req.Action)
		if err != nil {
			return Response{Error: "step: " + err.Error()}, false
		}
		term, trunc := s.e.Terminated(), s.e.Done() && !s.e.Terminated()
		return Response{Obs: s.obs(), Reward: &r, Terminated: &term, Truncated: &trunc, Info: s.info(info)}, false
	case "close":
		return Response{OK: true}, true
	}
	return Response{Error: fmt.Sprintf("unknown op %q: want spec, reset, step or close", req.Op)}, false
}

func (s *Server) obs() []float64 { return s.e.State().Features() }

func (s *Server) info(i Info) *StepInfo {
	st := s.e.State()
	if i.Type == "" { // reset: describe the first tile
		i.Frame, i.Tile, i.Type = st.Tile.Frame, st.Tile.Tile, st.Tile.Type.String()
	}
	return &StepInfo{Frame: i.Frame, Tile: i.Tile, Type: i.Type, Settled: i.Settled, SettledN: i.SettledN,
		Predicted: i.Predicted, SimTime: s.e.Now().Seconds(), Events: s.e.Events()}
}
