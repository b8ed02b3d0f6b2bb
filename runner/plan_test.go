package runner

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

const planScenario = `name: two
paths:
  - name: a
    up: {delay_ms: 5, jitter_ms: 1}
    down: {delay_ms: 5, jitter_ms: 1}
  - name: b
    up: {delay_ms: 6, jitter_ms: 1}
    down: {delay_ms: 6, jitter_ms: 1}
`

func planFS(sweepBlock string) fstest.MapFS {
	return fstest.MapFS{
		"s.yaml": {Data: []byte(planScenario)},
		"e.yaml": {Data: []byte("name: e\nscenario: s.yaml\nrounds: 50\nseeds: 3\nstrategies:\n  - {strategy: ucb1}\n  - {strategy: sw-ucb, window: 20}\n  - {strategy: oracle}\n" + sweepBlock)},
	}
}

func TestPlanShardsAndWorkers(t *testing.T) {
	p, err := LoadPlan(planFS("sweep:\n  params:\n    paths[1].down.delay_ms: [2, 9]\n    strategies[1].window: [5, 20]\n"), "e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 4 || p.Runs() != 4*3*3 {
		t.Fatalf("%d points, %d runs", len(p.Points), p.Runs())
	}
	if got := p.Specs[1].Strategies[1].Config.Window; got == nil || *got != 20 {
		t.Fatalf("point 1's sw-ucb window %v, want 20", got)
	}
	ctx := context.Background()
	one, err := ExecuteShard(ctx, p, sweep.All, workpool.Options{Workers: 1}, LocalEnv)
	if err != nil {
		t.Fatal(err)
	}
	merged := map[int]*Run{}
	for i := range 5 {
		part, err := ExecuteShard(ctx, p, sweep.Shard{I: i, N: 5}, workpool.Options{Workers: 3}, LocalEnv)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range part {
			merged[k] = r
		}
	}
	if !reflect.DeepEqual(one, merged) {
		t.Fatal("five shards on three workers differ from one process on one worker")
	}
	// The swept delay reaches the environment: on the first point path b
	// (2 ms) is best, on the last (9 ms) path a is.
	res, err := Assemble(p, merged)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Best[0] != 1 || res[3].Best[0] != 0 {
		t.Fatalf("best paths %d and %d, want 1 and 0", res[0].Best[0], res[3].Best[0])
	}
	delete(merged, 7)
	if _, err := Assemble(p, merged); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("assemble without run 7: %v", err)
	}
}

func TestPlanBadSweeps(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"sweep:\n  params:\n    paths[5].down.delay_ms: [1]\n", "has 2 entries, no [5]"},
		{"sweep:\n  params:\n    strategies[0].strategy: [ucb1, thompson]\n", "not which strategies run"},
		{"sweep:\n  params:\n    paths[0].down.loss: [2]\n", "outside [0, 1]"},
		{"sweep:\n  params:\n    bogus: [1]\n", "neither the experiment nor its scenario"},
	} {
		_, err := LoadPlan(planFS(tc.block), "e.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.block, err, tc.want)
		}
	}
}
