package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// reproduceMark marks a directory as reproduce's, so that a later
// reproduce may write into it again (a run stopped before its page
// leaves no index.json, but its mark).
const reproduceMark = ".hetquic-reproduce"

// reproduceOut is where reproduce writes, settled before any run: --out
// (new, empty or an earlier reproduce's; anything else is refused), else a
// fresh results/reproduce/RUN (fresh: link latest to it once the page is
// written). prev is the index.json of the last run, for the estimates.
func reproduceOut(out string, now time.Time) (dir string, fresh bool, prev string, err error) {
	if out == "" {
		prev = filepath.Join("results", "reproduce", latestLink, "index.json")
		dir, err = newRunDir("reproduce", now)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, reproduceMark), nil, 0o644)
		}
		return dir, err == nil, prev, err
	}
	if err := claimReproduceDir(out); err != nil {
		return "", false, "", badInput(err)
	}
	return out, false, filepath.Join(out, "index.json"), nil
}

// claimReproduceDir makes --out DIR ready for reproduce: created, writable,
// and empty (dot files aside) or marked as an earlier reproduce's.
func claimReproduceDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ours := isReproduceDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && !ours {
			return fmt.Errorf("--out: %s is not empty and is not an earlier reproduce's output (no %s): give a new or empty directory (or leave --out out: results/reproduce/RUN)", dir, reproduceMark)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, reproduceMark), nil, 0o644); err != nil {
		return fmt.Errorf("--out: %s is not writable: %w", dir, err)
	}
	return nil
}

// isReproduceDir: dir holds reproduce's mark, or the index.json of a
// reproduce run written before the mark existed.
func isReproduceDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, reproduceMark)); err == nil {
		return true
	}
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return false
	}
	var idx struct {
		Command string `json:"command"`
	}
	return json.Unmarshal(data, &idx) == nil && strings.HasPrefix(idx.Command, "hetquic reproduce")
}

// pruneStale removes from an earlier reproduce's directory the steps its
// last page recorded (index.json's runs) that this run does not have, so
// that the new page's directory holds no results of another run. Only
// plain names that index.json lists are removed.
func pruneStale(dir string, keep []string) error {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil // no earlier page: nothing recorded to prune
	}
	var idx struct {
		Runs []struct {
			Dir string `json:"dir"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil
	}
	for _, r := range idx.Runs {
		name := r.Dir
		if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") || slices.Contains(keep, name) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("--out: removing the earlier run's %s: %w", name, err)
		}
	}
	return nil
}
