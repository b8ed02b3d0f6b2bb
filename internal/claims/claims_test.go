package claims

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

const good = `
paper: demo
title: A demo paper
claims:
  - id: speedup
    where: Fig. 3
    claim: it is 2× faster
    experiment: demo-exp
    metric: rows[label=new].speed
    over: rows[label=old].speed
    paper_value: 2
    reproduced: {within_rel: 0.1}
    refuted: {at_most: 1}
`

func summary(t *testing.T, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJudgeVerdicts(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Claims[0]
	for _, tc := range []struct {
		newSpeed float64
		want     Verdict
		value    float64
	}{
		{21, Reproduced, 2.1},    // within 10 % of 2
		{22, Reproduced, 2.2},    // the edge
		{25, NotReproduced, 2.5}, // faster, but not as claimed
		{12, NotReproduced, 1.2}, // faster, by less
		{10, Refuted, 1},         // not faster at all
		{8, Refuted, 0.8},
	} {
		js := `{"rows":[{"label":"old","speed":10},{"label":"new","speed":` + jsonNum(tc.newSpeed) + `}]}`
		r := Judge(c, summary(t, js))
		if r.Err != nil || r.Verdict != tc.want || math.Abs(r.Value-tc.value) > 1e-12 {
			t.Errorf("new speed %g: got %v %g (%v), want %v %g", tc.newSpeed, r.Verdict, r.Value, r.Err, tc.want, tc.value)
		}
	}
	r := Judge(c, summary(t, `{"rows":[{"label":"old","speed":10}]}`))
	if r.Verdict != Failed || r.Err == nil || !strings.Contains(r.Err.Error(), "label=new") {
		t.Errorf("missing row: got %v %v, want an error naming the selector", r.Verdict, r.Err)
	}
}

func jsonNum(v float64) string { b, _ := json.Marshal(v); return string(b) }

func TestLookup(t *testing.T) {
	s := summary(t, `{"a":{"b":[{"k":"x.y","v":1},{"k":2,"v":2},{"k":"d","v":3},{"k":"d","v":4}]},"n":null,"s":"str"}`)
	for _, tc := range []struct {
		path string
		want float64
		err  string
	}{
		{path: "a.b[0].v", want: 1},
		{path: "a.b[k=x.y].v", want: 1},
		{path: "a.b[k=2].v", want: 2},
		{path: "a.b[k=d].v", err: "2 elements"},
		{path: "a.b[k=z].v", err: "no element"},
		{path: "a.b[9].v", err: "no [9]"},
		{path: "a.c", err: `no field "c"`},
		{path: "a.b", err: "not a number"},
		{path: "n", err: "null"},
		{path: "s", err: "not a number"},
		{path: "s.x", err: "not an object"},
		{path: "a[0]", err: "not a list"},
		{path: "a..b", err: "bad step"},
		{path: "a.b[-1]", err: "not a number ≥ 0"},
		{path: "a.b[=x]", err: "no key"},
		{path: "", err: "empty path"},
	} {
		got, err := Lookup(s, tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one containing %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %g, %v; want %g", tc.path, got, err, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	base := strings.TrimSpace(good)
	for _, tc := range []struct{ old, new, err string }{
		{"paper: demo", "paper: Demo Paper", `paper: "Demo Paper" is not an id`},
		{"title: A demo paper", "title: ''", "title: missing"},
		{"    where: Fig. 3\n", "", "where: missing"},
		{"id: speedup", "id: Speed", `id: "Speed"`},
		{"metric: rows[label=new].speed", "metric: rows[x", "metric:"},
		{"over: rows[label=old].speed", "over: rows..speed", "over:"},
		{"    paper_value: 2\n", "    paper_text: twice\n", "within_rel/within_abs need the claim's paper_value"},
		{"    paper_value: 2\n", "", "paper_value or paper_text"},
		{"{within_rel: 0.1}", "{}", "reproduced: no condition"},
		{"{within_rel: 0.1}", "{within_rel: -1}", "must be ≥ 0"},
		{"{at_most: 1}", "{between: [2, 1]}", "refuted: between"},
		{"{at_most: 1}", "{at_most: .nan}", "not a finite number"},
		{"experiment: demo-exp", "experiment: ../x", "not an experiment name"},
		{"    claim: it is 2× faster\n", "    claim: it is 2× faster\n    typo: 1\n", `unknown field "typo"`},
	} {
		in := strings.Replace(base, tc.old, tc.new, 1)
		if in == base {
			t.Fatalf("test case %q does not change the input", tc.old)
		}
		_, err := Parse("demo.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q → %q: err %v, want one line containing %q", tc.old, tc.new, err, tc.err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "demo.yaml") {
			t.Errorf("error %q does not name the file", err)
		}
	}
	dup := base + "\n" + strings.SplitN(base, "claims:\n", 2)[1]
	if _, err := Parse("demo.yaml", []byte(dup)); err == nil || !strings.Contains(err.Error(), `duplicate id "speedup"`) {
		t.Errorf("duplicate id: err %v", err)
	}
}

func TestLoadAllNamesFileAfterPaper(t *testing.T) {
	fsys := fstest.MapFS{"claims/other.yaml": {Data: []byte(good)}}
	if _, err := LoadAll(fsys, "claims"); err == nil || !strings.Contains(err.Error(), `want the file's name "other"`) {
		t.Errorf("err %v", err)
	}
	fsys = fstest.MapFS{"claims/demo.yaml": {Data: []byte(good)}, "claims/README": {Data: []byte("x")}}
	files, err := LoadAll(fsys, "claims")
	if err != nil || len(files) != 1 || files[0].Paper != "demo" {
		t.Errorf("got %v, %v", files, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		for i := range c.Claims {
			// A parsed claim's paths parse and its conditions judge without panicking.
			Judge(&c.Claims[i], map[string]any{})
		}
	})
}
