package env

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/ride"
)

func TestEpisodeContract(t *testing.T) {
	cfg := Config{Seed: 9, Video: 1, Frames: 50, Start: -1}
	run := func() ([]float64, *Env) {
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var rs []float64
		rr := &ride.RoundRobin{}
		for !e.Done() {
			st := e.State()
			if got := len(st.Features()); got != ride.FeatureDim(2) {
				t.Fatalf("features %d, want %d", got, ride.FeatureDim(2))
			}
			r, _, err := e.Step(rr.Act(st))
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs, e
	}
	a, e := run()
	b, _ := run()
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different rewards")
	}
	if perFrame := float64(len(a)) / 50; perFrame < 35 || perFrame > 48 {
		t.Errorf("%.1f decisions per frame, want about 40 (one per viewed tile)", perFrame)
	}
	if e.Terminated() {
		t.Error("a 50-frame episode of a 60 s video ended as terminated, want truncated")
	}
	if _, _, err := e.Step(0); !errors.Is(err, ErrDone) {
		t.Errorf("step after the end: err = %v, want ErrDone", err)
	}
	e2, _ := New(cfg)
	for _, bad := range []int{2, -2, 99} {
		if _, _, err := e2.Step(bad); err == nil || !strings.Contains(err.Error(), "action") {
			t.Errorf("action %d: err = %v, want a clear error", bad, err)
		}
	}
	if _, err := New(Config{Video: 7}); err == nil {
		t.Error("video 7 accepted")
	}
	if _, err := New(Config{Start: 3}); err == nil {
		t.Error("a start frame that is not an I frame accepted")
	}
}

// The paths match §5.5.1: mean RTT about 30 ms (LTE) and 20 ms (Wi-Fi),
// median rates about 20 and 40 Mbit/s, and they vary.
func TestNetworkMatchesThesis(t *testing.T) {
	sp := &rttSampler{Policy: ride.MinRTT{}}
	e, err := Run(Config{Seed: 3, Video: 0, Frames: 300, Start: 0}, sp)
	if err != nil {
		t.Fatal(err)
	}
	for m, want := range []struct {
		rtt  time.Duration
		mbps float64
	}{{30 * time.Millisecond, 20}, {20 * time.Millisecond, 40}} {
		tr := slices.Clone(e.RateTrace(m))
		slices.Sort(tr)
		med := tr[len(tr)/2]
		if math.Abs(med-want.mbps) > 0.3*want.mbps {
			t.Errorf("path %d median rate %.1f Mbit/s, want ≈ %v", m, med, want.mbps)
		}
		if tr[len(tr)*9/10] < 1.3*tr[len(tr)/10] {
			t.Errorf("path %d rate hardly varies: p10 %.1f p90 %.1f", m, tr[len(tr)/10], tr[len(tr)*9/10])
		}
		// Unloaded RTT (what §5.5.1's ping traces measure): base delay
		// plus its slow variation, mean 2·OneWay + DelayMax/2.
		pm := e.paths[m].model
		if base := 2*pm.OneWay + pm.DelayMax/2; base != want.rtt {
			t.Errorf("path %d mean unloaded RTT %v, want %v", m, base, want.rtt)
		}
		minRTT := e.conn.PathView(m).MinRTT
		if minRTT < 2*pm.OneWay || minRTT > 2*pm.OneWay+pm.DelayMax {
			t.Errorf("path %d min RTT %v outside the base delay's range", m, minRTT)
		}
		// Streaming adds queueing, but the path stays usable.
		if rtt := sp.sum[m] / time.Duration(sp.n); rtt < want.rtt || rtt > 2*want.rtt {
			t.Errorf("path %d mean SRTT while streaming %v, want in [%v, %v]", m, rtt, want.rtt, 2*want.rtt)
		}
	}
}

func TestRecordOutcomes(t *testing.T) {
	e, err := Run(Config{Seed: 5, Video: 4, Frames: 100, Start: 0, Record: true}, &ride.RoundRobin{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Outcomes) != e.Steps() {
		t.Fatalf("%d outcomes for %d decisions: every decision settles", len(e.Outcomes), e.Steps())
	}
	var byType [3]int
	onTime := 0
	for _, o := range e.Outcomes {
		byType[o.Type]++
		if o.Stages.Rebuff == 0 {
			onTime++
		}
	}
	t.Logf("outcomes %d (I %d P %d B %d), on time %d", len(e.Outcomes), byType[0], byType[1], byType[2], onTime)
	if byType[ride.I] == 0 || byType[ride.B] < byType[ride.P] {
		t.Errorf("tile-frames by type %v: want I present and more B than P", byType)
	}
	if onTime == 0 || onTime == len(e.Outcomes) {
		t.Errorf("%d of %d tiles on time: the scenario should be neither trivial nor hopeless", onTime, len(e.Outcomes))
	}
}

// rttSampler averages each path's SRTT over the decisions.
type rttSampler struct {
	ride.Policy
	sum [2]time.Duration
	n   int
}

func (r *rttSampler) Act(s *ride.State) int {
	for m := range r.sum {
		r.sum[m] += s.Paths[m].SRTT
	}
	r.n++
	return r.Policy.Act(s)
}

// The step reward (Eq. 5.1 estimate) tracks the true reward it stands in
// for (docs/ride.md: "correlate at 0.67–0.99").
func TestPredictedRewardTracksTrue(t *testing.T) {
	for _, p := range []ride.Policy{&ride.RoundRobin{}, ride.MinRTT{}} {
		e, err := Run(Config{Seed: 5, Video: 4, Frames: 100, Start: 0, Record: true}, p)
		if err != nil {
			t.Fatal(err)
		}
		var sp, sr, spp, srr, spr float64
		for _, o := range e.Outcomes {
			sp, sr = sp+o.Predicted, sr+o.Reward
			spp, srr, spr = spp+o.Predicted*o.Predicted, srr+o.Reward*o.Reward, spr+o.Predicted*o.Reward
		}
		n := float64(len(e.Outcomes))
		corr := (spr/n - sp/n*sr/n) / math.Sqrt((spp/n-sp*sp/n/n)*(srr/n-sr*sr/n/n))
		if corr < 0.6 {
			t.Errorf("%s: predicted and true reward correlate at %.2f, want ≥ 0.6", p.Name(), corr)
		}
	}
}
