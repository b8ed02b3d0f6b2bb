package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/ride"
	"github.com/hetquic/hetquic/ride/env"
)

func TestEvaluateAndWrite(t *testing.T) {
	pols, err := Baselines(1)
	if err != nil {
		t.Fatal(err)
	}
	// RIDE's slot: a policy named "ride" (here always Wi-Fi).
	pols = append([]ride.Policy{named{"ride", 1}}, pols...)
	ms, err := Evaluate(context.Background(), Config{Seed: 2, Frames: 60}, pols, workpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Evaluate(context.Background(), Config{Seed: 2, Frames: 60}, pols[:1], workpool.Options{Workers: 1})
	if ms[0].MeanFrameReward() != again[0].MeanFrameReward() {
		t.Error("the same seed and policy gave another reward")
	}
	for _, m := range ms {
		if len(m.FrameReward) < 55 || m.Decided[ride.I] == 0 || len(m.ViewportMbps) == 0 {
			t.Errorf("%s: %d frames rewarded, %v decided", m.Policy, len(m.FrameReward), m.Decided)
		}
		for _, ty := range []ride.FrameType{ride.I, ride.P, ride.B} {
			if z := m.ZeroRebuff(ty); z < 0 || z > 1 {
				t.Errorf("%s: zero-rebuffering share %v", m.Policy, z)
			}
		}
	}
	dir := t.TempDir()
	files, err := Write(dir, ms, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	rep, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| ride |", "| peekaboo |", "no rebuffering I / P / B"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The summary's derived numbers, which the claims read.
	sum := Summarize(results.NewHeader("t", "ride", []uint64{2}), 60, ms)
	ranks := map[int]bool{}
	for k, p := range sum.Policies {
		ranks[p.RewardRank] = true
		for _, o := range sum.Policies {
			if (o.MeanFrameReward > p.MeanFrameReward) != (o.RewardRank < p.RewardRank) && o.MeanFrameReward != p.MeanFrameReward {
				t.Errorf("%s rank %d vs %s rank %d: not in reward order", p.Policy, p.RewardRank, o.Policy, o.RewardRank)
			}
		}
		for ty := range p.Interruption {
			if p.Interruption[ty]+p.ZeroRebuff[ty] != 1 {
				t.Errorf("%s: interruption %v + zero-rebuffering %v ≠ 1", p.Policy, p.Interruption[ty], p.ZeroRebuff[ty])
			}
		}
		if mean, _ := stats.MeanStd(ms[k].ViewportMbps); p.ViewportMbpsMean != mean || mean <= 0 {
			t.Errorf("%s: viewport mean %v, want %v > 0", p.Policy, p.ViewportMbpsMean, mean)
		}
	}
	if !ranks[1] {
		t.Errorf("no policy ranked first: %v", ranks)
	}
}

type named struct {
	name string
	path int
}

func (n named) Name() string        { return n.name }
func (n named) Act(*ride.State) int { return n.path }

func TestParseSpec(t *testing.T) {
	pol, err := os.ReadFile("../policies/ride-seed1.json")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"p/pol.json": {Data: pol}, "p/bad.json": {Data: []byte(`{"format":"x"}`)}}
	good := "name: r\nmode: ride\nride:\n  policy: pol.json\n  frames: 20\n"
	s, err := Parse(fsys, "p/r.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if pols, _ := s.Policies(); len(pols) != 4 || pols[0].Name() != "ride" || s.Seed != 1 {
		t.Errorf("policies %d, first %q, seed %d: want ride + 3 baselines, seed defaulted to 1", len(pols), pols[0].Name(), s.Seed)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"name: r\nmode: ride\nride:\n  polcy: pol.json\n", "polcy"},
		{"name: r\nmode: ride\nride:\n  frames: -3\n", "ride.frames: -3"},
		{"name: r\nmode: ride\nride:\n  max_loss: -0.001\n", "ride.max_loss: -0.001"},
		{"name: r\nmode: ride\nride:\n  max_loss: 2\n", "ride.max_loss: 2"},
		{"name: r\nmode: ride\nseeds: 3\n", "seeds: 3"},
		{"name: r\nmode: ride\nride:\n  policy: none.json\n", "ride.policy"},
		{"name: r\nmode: ride\nride:\n  policy: bad.json\n", "format"},
		{"name: r\nmode: sim\n", "want ride"},
	} {
		if _, err := Parse(fsys, "p/r.yaml", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one mentioning %q", tc.yaml, err, tc.want)
		}
	}
}

// A sweep over seed makes seeds × policies runs, each point read
// with its seed; a sweep that adds or drops the RIDE policy is refused,
// naming the point. Baselines returns numBaselines policies, which Plan
// counts on.
func TestLoadPlan(t *testing.T) {
	if b, err := Baselines(1); err != nil || len(b) != numBaselines {
		t.Fatalf("Baselines: %d policies, %v; want %d", len(b), err, numBaselines)
	}
	pol, err := os.ReadFile("../policies/ride-seed1.json")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"p/pol.json": {Data: pol},
		"p/r.yaml":   {Data: []byte("name: r\nmode: ride\nride: {policy: pol.json, frames: 20}\nsweep: {params: {spec.seed: [1, 2, 3]}}\n")},
		"p/b.yaml":   {Data: []byte("name: r\nmode: ride\nride: {frames: 20}\nsweep: {params: {spec.seed: [4, 5]}}\n")},
		"p/x.yaml":   {Data: []byte("name: r\nmode: ride\nride: {frames: 20, policy: pol.json}\nsweep: {params: {ride.policy: [pol.json, \"\"]}}\n")},
		"p/l.yaml":   {Data: []byte("name: r\nmode: ride\nride: {frames: 20}\nsweep: {params: {ride.max_loss: [0, 0.004]}}\n")},
	}
	// A loss sweep reaches the paths: each point's episode has its ceiling.
	l, err := LoadPlan(fsys, "p/l.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0, 0.004} {
		cfg := Config{MaxLoss: l.Specs[i].Ride.MaxLoss}.envConfig()
		if len(cfg.Paths) != 2 || cfg.Paths[0].MaxLoss != want || cfg.Paths[1].MaxLoss != want || cfg.Paths[1].MedianMbps != env.WiFi.MedianMbps {
			t.Errorf("point %d: paths %+v, want LTE and Wi-Fi with max_loss %v", i, cfg.Paths, want)
		}
	}
	if cfg := (Config{}).envConfig(); cfg.Paths != nil || cfg.Video != env.TestVideo {
		t.Errorf("no override: %+v, want the models' paths on the test video", cfg)
	}
	p, err := LoadPlan(fsys, "p/r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 3 || p.Runs() != 3*4 || p.Specs[2].Seed != 3 || p.Specs[2].Sweep != nil {
		t.Fatalf("%d points, %d runs, point 2 seed %d; want 3 points × 4 policies, seed 3", len(p.Points), p.Runs(), p.Specs[2].Seed)
	}
	if b, err := LoadPlan(fsys, "p/b.yaml"); err != nil || b.Runs() != 2*numBaselines {
		t.Fatalf("baselines only: %v, want %d runs", err, 2*numBaselines)
	}
	if _, err := LoadPlan(fsys, "p/x.yaml"); err == nil || !strings.Contains(err.Error(), "point ride.policy=: a sweep may change the RIDE policy's file, not whether one runs") {
		t.Fatalf("a sweep that drops RIDE: %v", err)
	}
}

// TestBaselinesShared: points that differ only in the RIDE policy share
// each baseline's run (one run, one result), while each point evaluates
// its own policy and another seed runs the baselines again.
func TestBaselinesShared(t *testing.T) {
	fsys := fstest.MapFS{"p/r.yaml": {Data: []byte("name: r\nmode: ride\nride: {policy: a.json, frames: 10}\n" +
		"sweep: {params: {ride.policy: [a.json, b.json], spec.seed: [1, 2]}}\n")}}
	for _, f := range []string{"a", "b"} {
		data, err := os.ReadFile("../policies/ride-seed1.json")
		if f == "b" {
			data, err = os.ReadFile("../policies/ride-seed2.json")
		}
		if err != nil {
			t.Fatal(err)
		}
		fsys["p/"+f+".json"] = &fstest.MapFile{Data: data}
	}
	p, err := LoadPlan(fsys, "p/r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := RunShard(context.Background(), p, sweep.All, workpool.Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Points in grid order: (a, 1), (a, 2), (b, 1), (b, 2); 4 runs each.
	at := func(pi, r int) *env.Metrics { return runs[p.First(pi)+r] }
	if at(0, 0) == at(2, 0) {
		t.Error("two policies' RIDE runs are one")
	}
	for r := 1; r <= numBaselines; r++ {
		if at(0, r) != at(2, r) || at(1, r) != at(3, r) {
			t.Errorf("baseline %d ran once per point, not once per seed", r)
		}
		if at(0, r) == at(1, r) {
			t.Errorf("baseline %d: seeds 1 and 2 share a run", r)
		}
	}
}

// Every committed policy says what it trained for, and the evaluated one
// had at least the short budget (the thesis's is 1.2 M steps; docs/ride.md
// says which checkpoint of which run each file is and why).
func TestCommittedPolicies(t *testing.T) {
	files, _ := filepath.Glob("../policies/*.json")
	if len(files) < 3 {
		t.Fatalf("%d policy files, want one per training seed (≥ 3)", len(files))
	}
	seeds := map[int]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ride.ReadMLP(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m.Training == nil || m.Training.Steps < 300_000 || m.Training.Run != 1_200_000 {
			t.Errorf("%s: training %+v, want ≥ 300 000 steps of a 1.2 M-step run", f, m.Training)
			continue
		}
		seeds[m.Training.Seed] = true
	}
	if len(seeds) < 3 {
		t.Errorf("training seeds %v, want three", seeds)
	}
}
