package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/results"
)

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
		prev = filepath.Join("results", "reproduce", results.LatestLink, "index.json")
		dir, err = results.NewRunDir("reproduce", now)
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
