package sweep

import (
	"bytes"
	"compress/gzip"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// The files of a shard's partial results. The runs are gob-encoded, which
// keeps every float bit for bit (what makes a merge identical to a
// single-process run), and gzipped; the header is JSON, for people.
const (
	partialMeta    = "partial.json"
	partialRuns    = "runs.gob.gz"
	partialVersion = 1
)

// Header describes a shard's partial results.
type Header struct {
	SchemaVersion int    `json:"schema_version"`
	Experiment    string `json:"experiment"`
	// Spec is the experiment as named on the shard's command line (a
	// built-in name or a file), so that a merge can find it again.
	Spec  string `json:"spec"`
	Seeds int    `json:"seeds"` // per point: the file's, or exp run --seeds
	// PlanHash identifies the inputs (every point's files and overrides):
	// shards of different inputs are never merged.
	PlanHash  string `json:"plan_hash"`
	Shard     string `json:"shard"`
	TotalRuns int    `json:"total_runs"`
	Runs      []int  `json:"runs"` // the run numbers held, increasing
}

// WritePartial writes runs (by run number) and h into dir. The header is
// written last: a directory with a header holds all of its runs.
func WritePartial[T any](dir string, h Header, runs map[int]*T) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h.SchemaVersion = partialVersion
	h.Runs = h.Runs[:0]
	for k := range runs {
		h.Runs = append(h.Runs, k)
	}
	slices.Sort(h.Runs)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := gob.NewEncoder(zw)
	for _, k := range h.Runs {
		if err := enc.Encode(runs[k]); err != nil {
			return fmt.Errorf("run %d: %w", k, err)
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, partialRuns), buf.Bytes(), 0o644); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, partialMeta), append(meta, '\n'), 0o644)
}

// ReadHeader reads the header of a shard's directory.
func ReadHeader(dir string) (Header, error) {
	var h Header
	meta, err := os.ReadFile(filepath.Join(dir, partialMeta))
	if err != nil {
		return h, fmt.Errorf("%s: not a shard's results (no %s)", dir, partialMeta)
	}
	if err := json.Unmarshal(meta, &h); err != nil {
		return h, fmt.Errorf("%s: %v", filepath.Join(dir, partialMeta), err)
	}
	if h.SchemaVersion != partialVersion {
		return h, fmt.Errorf("%s: schema_version %d, this hetquic reads %d", dir, h.SchemaVersion, partialVersion)
	}
	return h, nil
}

// ReadPartials reads the shards in dirs, all written for the plan whose hash
// and run count are given, and returns every run once. The same run in two
// directories (a shard that ran twice) counts once if both copies are
// identical; a run that no directory holds is an error.
func ReadPartials[T any](dirs []string, name, planHash string, total int) (map[int]*T, error) {
	runs := map[int]*T{}
	enc := map[int][]byte{}
	from := map[int]string{}
	for _, dir := range dirs {
		h, err := ReadHeader(dir)
		if err != nil {
			return nil, err
		}
		if h.PlanHash != planHash || h.TotalRuns != total {
			return nil, fmt.Errorf("%s: shard of another experiment or version of it (%s, plan %s; want %s, plan %s)", dir, h.Experiment, h.PlanHash, name, planHash)
		}
		if err := readRuns(dir, h, total, func(k int, run *T, b []byte) error {
			if prev, ok := enc[k]; ok {
				if !bytes.Equal(prev, b) {
					return fmt.Errorf("run %d differs between %s and %s: not the same experiment", k, from[k], dir)
				}
				return nil
			}
			runs[k], enc[k], from[k] = run, b, dir
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if len(runs) < total {
		var missing []int
		for k := 0; k < total && len(missing) < 5; k++ {
			if runs[k] == nil {
				missing = append(missing, k)
			}
		}
		return nil, fmt.Errorf("%s: %d of %d runs missing (first: %v); run the missing shards and merge again", name, total-len(runs), total, missing)
	}
	return runs, nil
}

func readRuns[T any](dir string, h Header, total int, add func(k int, run *T, enc []byte) error) error {
	f, err := os.Open(filepath.Join(dir, partialRuns))
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	dec := gob.NewDecoder(zr)
	for _, k := range h.Runs {
		if k < 0 || k >= total {
			return fmt.Errorf("%s: run %d is outside the plan's %d runs", dir, k, total)
		}
		run := new(T)
		if err := dec.Decode(run); err != nil {
			return fmt.Errorf("%s: run %d: %v", dir, k, err)
		}
		// Re-encoded alone, so two copies of a run compare byte for byte
		// whatever came before them in their files.
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(run); err != nil {
			return err
		}
		if err := add(k, run, b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
