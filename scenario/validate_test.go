package scenario

import (
	"strings"
	"testing"
)

func TestScenarioRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"name: s\npaths: [{name: a, up: {delay_ms: -3}}]\n", "paths[0].up.delay_ms: -3 must be a finite number ≥ 0"},
		{"name: s\npaths: [{name: a, down: {loss: 1.5}}]\n", "paths[0].down.loss: 1.5 is outside [0, 1]"},
		{"name: s\npaths: [{name: a, down: {lost: 0.1}}]\n", "s.yaml:2: unknown field \"lost\""},
		{"name: s\npaths: [{name: a}, {name: a}]\n", "paths[1].name: duplicate path name \"a\""},
		{"name: s\npaths: []\n", "paths: at least one path"},
		{"name: s\npaths: [{name: a}]\nevents: [{at_s: 1, path: a}]\n", "events[0]: needs set or outage_s"},
		{"name: s\npaths: [{name: a}]\nevents: [{at_s: 1, path: a, set: {sideways: {delay_ms: 1}}}]\n", `"sideways": unknown key`},
	} {
		_, err := Parse(nil, "s.yaml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.body, err, tc.want)
		}
	}
}

func TestPatch(t *testing.T) {
	p, err := ParsePatch("{down: {delay_ms: 60}, both: {loss: 0.01}}")
	if err != nil {
		t.Fatal(err)
	}
	path := Path{Name: "a", Up: Link{DelayMs: 5, JitterMs: 1}, Down: Link{DelayMs: 5, RateMbps: 10}}
	got, err := p.Apply(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Path{Name: "a", Up: Link{DelayMs: 5, JitterMs: 1, Loss: 0.01}, Down: Link{DelayMs: 60, RateMbps: 10, Loss: 0.01}}
	if got != want {
		t.Errorf("applied: %+v\nwant     %+v", got, want)
	}
	if path.Down.DelayMs != 5 {
		t.Error("Apply changed its argument")
	}
	if s := p.String(); !strings.Contains(s, "delay_ms: 60") {
		t.Errorf("String() = %q", s)
	}
	for text, want := range map[string]string{
		"{down: {delay_ms: -1}}": "down.delay_ms: -1",
		"{down: {delay: 5}}":     "unknown field \"delay\"",
		"{up: {loss: 0.1, gilbert_elliott: {p_good_bad: 0.1}}}": "at most one of loss",
		"[1, 2]": "must be a mapping",
	} {
		p, err := ParsePatch(text)
		if err == nil {
			_, err = p.Apply(path)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

func TestMeanLoss(t *testing.T) {
	g := GilbertElliott{PGoodBad: 0.01, PBadGood: 0.09, LossGood: 0, LossBad: 0.5}
	// Stationary P(bad) = 0.01/0.10 = 0.1, so mean loss 0.05.
	if m := (Link{GilbertElliott: &g}).MeanLoss(); m < 0.0499999 || m > 0.0500001 {
		t.Errorf("mean loss %v, want 0.05", m)
	}
}
