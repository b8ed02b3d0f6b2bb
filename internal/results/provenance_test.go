package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLoadAvg(t *testing.T) {
	for in, want := range map[string][]float64{
		"0.56 0.63 0.28 1/234 5678\n": {0.56, 0.63, 0.28},
		"12 3.5 0":                    {12, 3.5, 0},
		"0.5 0.6":                     nil,
		"":                            nil,
		"a 1 2":                       nil,
		"-1 1 2":                      nil,
		"NaN 1 2":                     nil,
	} {
		got, err := ParseLoadAvg(in)
		if (err == nil) != (want != nil) || len(got) != len(want) {
			t.Errorf("ParseLoadAvg(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("ParseLoadAvg(%q)[%d] = %g, want %g", in, i, got[i], want[i])
			}
		}
	}
}

func FuzzParseLoadAvg(f *testing.F) {
	f.Add("0.56 0.63 0.28 1/234 5678\n")
	f.Add("1 2")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseLoadAvg(s)
		if err == nil && (len(v) != 3 || v[0] < 0 || v[1] < 0 || v[2] < 0) {
			t.Fatalf("ParseLoadAvg(%q) = %v", s, v)
		}
	})
}

func TestProvenanceString(t *testing.T) {
	p := Provenance{Cores: 2, LoadAvg: []float64{0.5, 1, 2.25}}
	p.Hetquic.Version, p.Hetquic.Commit, p.Hetquic.Go = "(devel)", "abc", "go1.26"
	want := "Produced by hetquic (devel) commit abc go1.26 on 2 cores, load average 0.50 1.00 2.25."
	if got := p.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	p.LoadAvg = nil
	if got := p.String(); !strings.HasSuffix(got, "on 2 cores.") {
		t.Fatalf("without a load average: %q", got)
	}
}

// Every written summary.json and report.md carries the provenance; a
// summary only marshalled (what a doc block pastes) does not.
func TestWrittenFilesCarryProvenance(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSummary{Header: NewHeader("x", "offline", Seeds(1, 1)), Value: 1}
	if data, _ := MarshalSummary(s); strings.Contains(string(data), "provenance") {
		t.Fatalf("marshalled summary has a provenance: %s", data)
	}
	if err := d.WriteSummary(s); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteReport("# r\n"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(d.Root(), "summary.json"))
	var m struct {
		Provenance *Provenance `json:"provenance"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Provenance == nil || m.Provenance.Cores < 1 || m.Provenance.Hetquic.Go == "" {
		t.Fatalf("summary.json provenance: %s", data)
	}
	if _, err := os.Stat(loadAvgFile); err == nil && len(m.Provenance.LoadAvg) != 3 {
		t.Fatalf("load average missing though %s exists: %s", loadAvgFile, data)
	}
	rep, _ := os.ReadFile(filepath.Join(d.Root(), "report.md"))
	if !strings.Contains(string(rep), "\n"+ProvenancePrefix+"hetquic ") {
		t.Fatalf("report.md: %s", rep)
	}
}
