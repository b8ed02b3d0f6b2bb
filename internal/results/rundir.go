package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Where a command writes. Without --out every run gets a directory of its
// own, results/NAME/RUN (RUN: the UTC start time), and results/NAME/latest
// links the newest, so an earlier run's results are never overwritten (as
// SEM users keep them). --out DIR names the directory itself: it must be
// new, empty, or an earlier result of the same experiment, which the run
// replaces.

// LatestLink names the newest run of an experiment under results/NAME.
const LatestLink = "latest"

// RunStampLayout names a run directory by its UTC start time; it sorts in
// time order.
const RunStampLayout = "20060102T150405Z"

// NewRunDir makes results/NAME/RUN for a run started at now: a fresh
// directory, with -2, -3, … when a run started in the same second.
func NewRunDir(name string, now time.Time) (string, error) {
	base := filepath.Join("results", name)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("results: %w", err)
	}
	stamp := now.UTC().Format(RunStampLayout)
	for i := 1; ; i++ {
		dir := filepath.Join(base, stamp)
		if i > 1 {
			dir += fmt.Sprintf("-%d", i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("results: %w", err)
		}
	}
}

// LinkLatest points results/NAME/latest at run dir (replacing the link
// atomically).
func LinkLatest(dir string) error {
	parent := filepath.Dir(dir)
	tmp := filepath.Join(parent, "."+LatestLink+"-"+filepath.Base(dir))
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(parent, LatestLink))
}

// ClaimOutDir makes --out DIR ready before any run, so that a directory
// that cannot be written fails at once: it creates DIR, checks that a file
// can be written there, and refuses a directory holding anything but an
// earlier result of experiment name, whose own runs go under
// results/DIRNAME (entries that exp slurm's shards and logs use, and dot
// files, do not count).
func ClaimOutDir(dir, name, dirName string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".hetquic-probe-*")
	if err != nil {
		return fmt.Errorf("--out: %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	foreign := 0
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && n != "shards" && n != "slurm" {
			foreign++
		}
	}
	if foreign == 0 {
		return nil
	}
	if owner := resultOf(dir); owner != name {
		what := "no summary.json"
		if owner != "" {
			what = "the results of experiment " + owner
		}
		return fmt.Errorf("--out: %s is not empty and holds %s, not an earlier run of %s: give a new or empty directory (or leave --out out: results/%s/RUN)", dir, what, name, dirName)
	}
	return nil
}

// resultOf is the experiment whose summary.json dir holds ("" for none).
func resultOf(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return ""
	}
	var h struct {
		Experiment string `json:"experiment"`
	}
	if json.Unmarshal(data, &h) != nil {
		return ""
	}
	return h.Experiment
}
