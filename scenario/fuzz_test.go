package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// Fuzz targets of the scenario parsers. Seeds: the shipped scenarios
// (scenarios/ and scenarios/mixes/) and traces, and testdata/fuzz/<target>.
// An accepted input must keep its promises, and every error is one line.

func oneLine(t *testing.T, err error) {
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

func addFiles(f *testing.F, glob string) {
	names, _ := filepath.Glob(glob)
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
}

// traceFS holds the traces a fuzzed scenario may name.
var traceFS = fstest.MapFS{
	"t.mahi": {Data: []byte("1\n2\n3\n")},
	"l.txt":  {Data: []byte("0 0 1\n")},
}

// FuzzParse: a scenario file. An accepted scenario validates again.
func FuzzParse(f *testing.F) {
	addFiles(f, "../scenarios/*.yaml")
	addFiles(f, "../scenarios/mixes/*.yaml")
	f.Add([]byte("name: x\npaths:\n  - {name: a, down: {rate_trace: t.mahi, loss_trace: l.txt}}\nevents: [{at_s: 1, path: a, set: {down: {delay_ms: 5}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(traceFS, "s.yaml", data)
		oneLine(t, err)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
	})
}

// FuzzParseRateTrace: an accepted trace is non-decreasing with a period > 0.
func FuzzParseRateTrace(f *testing.F) {
	addFiles(f, "../scenarios/traces/*.mahi")
	f.Add([]byte("# c\n0\n0\n5\n"))
	f.Add([]byte("3\n2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseRateTrace("t", data)
		oneLine(t, err)
		if err != nil {
			return
		}
		if tr.PeriodMs() == 0 {
			t.Fatal("accepted a zero period")
		}
		for i := 1; i < len(tr.Ms); i++ {
			if tr.Ms[i] < tr.Ms[i-1] {
				t.Fatalf("accepted a decreasing trace at %d", i)
			}
		}
	})
}

// FuzzParseLossTrace: an accepted loss trace is not empty.
func FuzzParseLossTrace(f *testing.F) {
	f.Add([]byte("0 1 0\n# c\n1\n"))
	f.Add([]byte("2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseLossTrace("l", data)
		oneLine(t, err)
		if err == nil && len(d) == 0 {
			t.Fatal("accepted an empty trace")
		}
	})
}

// FuzzParsePatch: a live change (also the emulator control API's body).
// An accepted patch that applies leaves a valid path.
func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{"{down: {delay_ms: 60}}", "{both: {loss: 0.1, jitter_dist: pareto}}", "{up: 1}", "[", "{down: {gilbert_elliott: {p_good_bad: 2}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePatch(text)
		if err != nil {
			return
		}
		np, err := p.Apply(Path{Name: "a"})
		oneLine(t, err)
		if err != nil {
			return
		}
		if err := np.Up.validate("up"); err != nil {
			t.Fatalf("applied, then invalid: %v", err)
		}
		if err := np.Down.validate("down"); err != nil {
			t.Fatalf("applied, then invalid: %v", err)
		}
		_ = p.String()
	})
}
