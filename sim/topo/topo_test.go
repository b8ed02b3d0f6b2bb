package topo

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestAbilene(t *testing.T) {
	tp, err := Load(nil, "builtin:abilene")
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Nodes) != 11 || len(tp.Links) != 14 {
		t.Fatalf("abilene has %d nodes and %d links, want 11 and 14", len(tp.Nodes), len(tp.Links))
	}
	for _, l := range tp.Links {
		if l.RateMbps != 100 || l.Loss != 0.00001 || l.DelayMs < 0 || l.DelayMs > 100 {
			t.Errorf("link %s-%s: %+v outside the paper's §4.1 settings", l.A, l.B, l)
		}
	}
}

const square = `name: sq
nodes: [a, b, c, d]
links:
  - {a: a, b: b, delay_ms: 1, rate_mbps: 10}
  - {a: b, b: d, delay_ms: 1, rate_mbps: 10}
  - {a: a, b: c, delay_ms: 2, rate_mbps: 50}
  - {a: c, b: d, delay_ms: 2, rate_mbps: 50}
  - {a: b, b: c, delay_ms: 1, rate_mbps: 10}
`

func TestYen(t *testing.T) {
	tp, err := Parse("sq.yaml", []byte(square))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tp.Node("a")
	d, _ := tp.Node("d")
	got := tp.KShortest(a, d, 10, tp.DelayWeight())
	var names []string
	for _, p := range got {
		names = append(names, tp.String(p))
	}
	want := []string{"a-b-d", "a-c-d", "a-b-c-d", "a-c-b-d"} // equal delay: fewer hops first
	if !slices.Equal(names, want) {
		t.Fatalf("Yen: %v, want %v", names, want)
	}
}

func TestSelectPathSet(t *testing.T) {
	tp, _ := Parse("sq.yaml", []byte(square))
	a, _ := tp.Node("a")
	d, _ := tp.Node("d")
	avail := []float64{10, 10, 50, 50, 10}
	f := Flow{Src: a, Dst: d, BWMbps: 0, MaxDelayMs: 100, MaxLoss: 0.01}
	p := MinFCTParams{K: 2, Candidates: 4, Alpha: 0.5, Beta: 0.5}
	set, err := tp.SelectPathSet(f, avail, p)
	if err != nil {
		t.Fatal(err)
	}
	// Loss-free: the weights order by delay: a-b-d (2 ms), then a-b-c-d (4 ms) tied with a-c-d (4 ms).
	if tp.String(set[0].Path) != "a-b-d" {
		t.Fatalf("heaviest path %s, want a-b-d", tp.String(set[0].Path))
	}
	// Asking for 55 Mbit/s: the bandwidth check swaps narrow paths for a-c-d.
	f.BWMbps = 55
	set, err = tp.SelectPathSet(f, avail, p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range set {
		got = append(got, tp.String(c.Path))
	}
	if !slices.Contains(got, "a-c-d") {
		t.Fatalf("bandwidth check kept %v, want a-c-d in the set", got)
	}
	// k larger than the candidates: rejected.
	if _, err := tp.SelectPathSet(f, avail, MinFCTParams{K: 9, Candidates: 9, Alpha: .5, Beta: .5}); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("k=9: err %v, want a rejection", err)
	}
}

func TestWeightEq19(t *testing.T) {
	f := Flow{MaxDelayMs: 100, MaxLoss: 0.01}
	if got := PathWeight(f, 50, 0.001, 0.5, 0.5); got != 0.5*2+0.5*10 {
		t.Fatalf("p_w = %v, want 6", got)
	}
}

func TestBadTopology(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"name: x\nnodes: [a, b]\nlinks:\n  - {a: a, b: z, rate_mbps: 1}\n", "links[0].b: no node named \"z\""},
		{"name: x\nnodes: [a, b]\nlinks:\n  - {a: a, b: b, rate_mbps: 0}\n", "links[0].rate_mbps"},
		{"name: x\nnodes: [a, b]\nlinks:\n  - {a: a, b: b, rate_mbps: 1, loss: 2}\n", "links[0].loss"},
		{"name: x\nnodes: [a]\n", "nodes: at least two"},
		{"name: x\nnodes: [a, b]\nbogus: 1\n", "unknown field \"bogus\""},
	} {
		_, err := Load(fstest.MapFS{"t.yaml": {Data: []byte(c.text)}}, "t.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err %v, want one line containing %q", c.text, err, c.want)
		}
	}
}
