package env

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetquic/hetquic/ride"
)

func TestServerProtocol(t *testing.T) {
	in := strings.Join([]string{
		`{"op":"spec"}`,
		`{"op":"step","action":0}`,
		`{"op":"reset","seed":3,"video":2,"frames":2}`,
		`{"op":"step","action":0}`,
		`{"op":"step","action":-1}`,
		`{"op":"step","action":7}`,
		`{"op":"step"}`,
		`{"op":"jump"}`,
		`{"op":"step","action":"x"}`,
		`not json`,
		`{"op":"reset","video":9}`,
		`{"op":"reset","frames":-1}`,
		`{"op":"reset","seed":1,"extra":1}`,
		`{"op":"close"}`,
		`{"op":"spec"}`, // after close: not answered
	}, "\n")
	var out strings.Builder
	if err := (&Server{}).Serve(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var resps []Response
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Text(), err)
		}
		resps = append(resps, r)
	}
	if len(resps) != 14 {
		t.Fatalf("%d responses, want 14 (one per request up to close)", len(resps))
	}
	sp := resps[0].Spec
	if sp == nil || sp.ObsDim != ride.FeatureDim(2) || sp.Paths != 2 || len(sp.Actions) != 3 || sp.Actions[0] != -1 || sp.Protocol != ProtocolVersion {
		t.Errorf("spec = %+v", sp)
	}
	wantErr := map[int]string{1: "no episode", 5: "action 7", 6: `missing "action"`, 7: `unknown op "jump"`,
		8: "bad request", 9: "bad request", 10: "video 9", 11: "frames -1", 12: "unknown field"}
	for k, r := range resps {
		if want, bad := wantErr[k]; bad {
			if !strings.Contains(r.Error, want) {
				t.Errorf("response %d error %q, want one containing %q", k, r.Error, want)
			}
		} else if r.Error != "" {
			t.Errorf("response %d: unexpected error %q", k, r.Error)
		}
	}
	if r := resps[2]; len(r.Obs) != ride.FeatureDim(2) || r.Info == nil || r.Info.Type != "I" {
		t.Errorf("reset response %+v: want an observation and the first tile (an I frame)", r)
	}
	if r := resps[3]; r.Reward == nil || r.Terminated == nil || *r.Terminated || *r.Truncated {
		t.Errorf("step response %+v: want a reward and a running episode", r)
	}
	if !resps[13].OK {
		t.Error("close not acknowledged")
	}
}

// An episode through the protocol gives the same rewards as Env directly.
func TestServerMatchesEnv(t *testing.T) {
	e, err := New(Config{Seed: 4, Video: 0, Frames: 3, Start: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{}
	srv.Handle([]byte(`{"op":"reset","seed":4,"video":0,"frames":3}`))
	for n := 0; !e.Done(); n++ {
		a := n%3 - 1
		want, _, err := e.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(Request{Op: "step", Action: &a})
		r, _ := srv.Handle(b)
		if r.Reward == nil || *r.Reward != want {
			t.Fatalf("step %d: server reward %v, env %v (%s)", n, r.Reward, want, r.Error)
		}
		if e.Done() != (*r.Terminated || *r.Truncated) {
			t.Fatalf("step %d: episode end disagrees", n)
		}
	}
}

func FuzzServerHandle(f *testing.F) {
	for _, s := range []string{`{"op":"spec"}`, `{"op":"reset","seed":1,"video":0,"frames":1}`,
		`{"op":"step","action":1}`, `{"op":"close"}`, `{"op":"reset","start":50,"frames":1}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		srv := &Server{}
		srv.Handle([]byte(`{"op":"reset","seed":1,"video":0,"frames":1}`))
		r, _ := srv.Handle(line)
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkEnvStep and BenchmarkServerStep compare a decision taken
// directly with one through the JSON protocol (the protocol's share of a
// step; the Python side adds its pipe round trip, see python/README.md).
// cpuTime is the process's user+system CPU time: on a machine shared with
// other jobs it measures the work a step costs where wall time measures
// the queue for the CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkEnvStep(b *testing.B) {
	defer reportCPU(b, cpuTime())
	var e *Env
	rr := &ride.RoundRobin{}
	for b.Loop() {
		if e == nil || e.Done() {
			b.StopTimer()
			e, _ = New(Config{Seed: 1, Video: 0, Frames: 100, Start: 0})
			b.StartTimer()
		}
		e.Step(rr.Act(e.State()))
	}
}

func BenchmarkServerStep(b *testing.B) {
	defer reportCPU(b, cpuTime())
	srv := &Server{}
	reset := []byte(`{"op":"reset","seed":1,"video":0,"frames":100,"start":0}`)
	srv.Handle(reset)
	n := 0
	for b.Loop() {
		a := n % 2
		n++
		line, _ := json.Marshal(Request{Op: "step", Action: &a})
		r, _ := srv.Handle(line)
		out, _ := json.Marshal(r)
		io.Discard.Write(out)
		if *r.Terminated || *r.Truncated {
			b.StopTimer()
			srv.Handle(reset)
			b.StartTimer()
		}
	}
}
