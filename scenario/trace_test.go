package scenario

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseRateTrace(t *testing.T) {
	tests := []struct {
		in      string
		want    []uint64
		wantErr string
	}{
		{"1\n1\n3\n", []uint64{1, 1, 3}, ""},
		{"# comment\n\n 2 \n5\n", []uint64{2, 5}, ""},
		{"", nil, "at least one timestamp"},
		{"0\n0\n", nil, "at least one timestamp > 0"},
		{"3\n2\n", nil, "t:2: timestamp 2 is before"},
		{"1\nx\n", nil, `t:2: "x" is not a whole number`},
		{"-1\n", nil, "not a whole number"},
	}
	for _, tt := range tests {
		got, err := ParseRateTrace("t", []byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRateTrace(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got.Ms) != len(tt.want) {
			t.Fatalf("ParseRateTrace(%q) = %v, %v", tt.in, got, err)
		}
		for i := range tt.want {
			if got.Ms[i] != tt.want[i] {
				t.Errorf("ParseRateTrace(%q) = %v, want %v", tt.in, got.Ms, tt.want)
			}
		}
	}
	tr, _ := ParseRateTrace("t", []byte("1\n2\n3\n4\n"))
	if got := tr.MeanMbps(); got != 12 { // 4 × 1500 B per 4 ms
		t.Errorf("MeanMbps = %v, want 12", got)
	}
}

func TestParseLossTrace(t *testing.T) {
	got, err := ParseLossTrace("l", []byte("0 1\n# c\n1\n0\n"))
	if err != nil || len(got) != 4 || got[0] || !got[1] || !got[2] || got[3] {
		t.Errorf("ParseLossTrace = %v, %v", got, err)
	}
	for _, bad := range []string{"", "2", "0 x"} {
		if _, err := ParseLossTrace("l", []byte(bad)); err == nil {
			t.Errorf("ParseLossTrace(%q) succeeded", bad)
		}
	}
}

func TestLoadChecksTraces(t *testing.T) {
	fsys := fstest.MapFS{
		"s/ok.yaml":      {Data: []byte("name: a\npaths:\n  - name: p\n    down: {rate_trace: t/r.mahi, loss_trace: t/l.txt}\n")},
		"s/t/r.mahi":     {Data: []byte("1\n2\n")},
		"s/t/l.txt":      {Data: []byte("0\n1\n")},
		"s/missing.yaml": {Data: []byte("name: a\npaths:\n  - name: p\n    up: {rate_trace: nope.mahi}\n")},
		"s/bad.yaml":     {Data: []byte("name: a\npaths:\n  - name: p\nevents:\n  - {at_s: 1, path: p, set: {up: {loss_trace: t/r.mahi}}}\n")},
	}
	if _, err := Load(fsys, "s/ok.yaml"); err != nil {
		t.Errorf("ok.yaml: %v", err)
	}
	for name, want := range map[string]string{
		"s/missing.yaml": "s/missing.yaml: paths[0].up.rate_trace: open s/nope.mahi",
		"s/bad.yaml":     `s/bad.yaml: events[0].set.up.loss_trace: t/r.mahi:2: "2" is not 0 or 1`,
	} {
		_, err := Load(fsys, name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) error %v, want %q", name, err, want)
		}
	}
}
