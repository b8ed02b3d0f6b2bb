package results

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/hetquic/hetquic/internal/version"
)

// Provenance says which build produced a result and on what machine: a
// paper's methods section needs the version, and a timing read later needs
// the cores and the load it ran beside. Every summary.json holds it (Header)
// and every report.md ends with its line (ProvenanceLine).
type Provenance struct {
	Hetquic version.Info `json:"hetquic"`
	Cores   int          `json:"cores"` // runtime.NumCPU
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute load averages when
	// the run was written; absent where the system has no /proc/loadavg.
	LoadAvg []float64 `json:"load_avg,omitempty"`
}

// loadAvgFile is where Linux publishes the load averages.
const loadAvgFile = "/proc/loadavg"

// buildInfo is read once per process: version.Get may run git, and the
// build does not change while the process runs.
var buildInfo = sync.OnceValue(version.Get)

// CurrentProvenance is this build on this machine, now.
func CurrentProvenance() Provenance {
	p := Provenance{Hetquic: buildInfo(), Cores: runtime.NumCPU()}
	if data, err := os.ReadFile(loadAvgFile); err == nil {
		p.LoadAvg, _ = ParseLoadAvg(string(data))
	}
	return p
}

// ParseLoadAvg reads the first three fields of /proc/loadavg ("0.56 0.63
// 0.28 1/234 5678"); it fails on fewer fields or a field that is not a
// finite non-negative number.
func ParseLoadAvg(s string) ([]float64, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil, fmt.Errorf("loadavg: %d fields, want at least 3", len(f))
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 || v != v || v > 1e9 {
			return nil, fmt.Errorf("loadavg: field %d %q is not a load average", i+1, f[i])
		}
		out[i] = v
	}
	return out, nil
}

// String is the one line report.md ends with.
func (p Provenance) String() string {
	s := fmt.Sprintf("%s%s on %d cores", ProvenancePrefix, p.Hetquic, p.Cores)
	if len(p.LoadAvg) == 3 {
		s += fmt.Sprintf(", load average %.2f %.2f %.2f", p.LoadAvg[0], p.LoadAvg[1], p.LoadAvg[2])
	}
	return s + "."
}

// ProvenancePrefix opens the provenance line of a report, so that a
// comparison of two runs' reports can leave that one line out.
const ProvenancePrefix = "Produced by "

// ProvenanceLine is the current provenance as report.md's last paragraph
// (for a report written without WriteReport).
func ProvenanceLine() string { return "\n" + CurrentProvenance().String() + "\n" }

// Stamp records the current provenance in s's header: the process that
// writes a file is the one it names (a merge names itself, not its shards).
func Stamp(s Summary) {
	p := CurrentProvenance()
	s.header().Provenance = &p
}

// WriteSummaryFile writes s, stamped, to the file path: summary.json for a
// writer that does not go through a Dir.
func WriteSummaryFile(path string, s Summary) error {
	Stamp(s)
	data, err := MarshalSummary(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
