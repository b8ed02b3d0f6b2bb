package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readTree maps every file under dir, except the shards and Slurm logs, to its bytes.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == "shards" || rel == "slurm") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			files[rel] = data
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameTree(t *testing.T, want, got string) {
	t.Helper()
	a, b := readTree(t, want), readTree(t, got)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%s has %d files, %s %d", want, len(a), got, len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between %s and %s", name, want, got)
		}
	}
}

// The shards of a sweep, run as the generated Slurm job array would run
// them and merged by the script's merge step, write what one process writes,
// byte for byte; a shard merged twice counts once; a missing one is an error.
func TestShardsViaSlurmScriptMergeIdentical(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	if _, stderr, code := runCLI(t, "exp", "run", "sweep-telecom-delay", "--quiet", "--out", single); code != 0 {
		t.Fatalf("exp run: %d %s", code, stderr)
	}
	out := filepath.Join(dir, "array")
	const n = 3
	script, stderr, code := runCLI(t, "exp", "slurm", "sweep-telecom-delay", "--shards", strconv.Itoa(n), "--out", out, "--hetquic", os.Args[0])
	if code != 0 {
		t.Fatalf("exp slurm: %d %s", code, stderr)
	}
	sh := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	bash := func(env ...string) {
		t.Helper()
		cmd := exec.Command("bash", sh)
		cmd.Env = append(append(os.Environ(), "HETQUIC_TEST_MAIN=1"), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bash job.sh %v: %v\n%s", env, err, b)
		}
	}
	for i := range n {
		bash("SLURM_ARRAY_TASK_ID=" + strconv.Itoa(i))
	}
	bash("SLURM_ARRAY_TASK_ID=1") // a re-run task replaces its shard
	bash("MERGE=1")
	sameTree(t, single, out)

	shards := filepath.Join(out, "shards")
	twice := filepath.Join(dir, "twice")
	if _, stderr, code := runCLI(t, "exp", "merge", "--out", twice, filepath.Join(shards, "00000"), filepath.Join(shards, "00001"), filepath.Join(shards, "00002"), filepath.Join(shards, "00001")); code != 0 {
		t.Fatalf("merge with a shard twice: %d %s", code, stderr)
	}
	sameTree(t, single, twice)

	_, stderr, code = runCLI(t, "exp", "merge", "--out", filepath.Join(dir, "partial"), filepath.Join(shards, "00000"), filepath.Join(shards, "00002"))
	if code != 2 || !strings.Contains(stderr, "runs missing") {
		t.Fatalf("merge without shard 1: exit %d, %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "exp", "merge", "--spec", "pcm-table5", filepath.Join(shards, "00000"))
	if code != 2 || !strings.Contains(stderr, "shard of another experiment") {
		t.Fatalf("merge into another experiment: exit %d, %q", code, stderr)
	}
	for _, bad := range [][]string{
		{"exp", "run", "sweep-telecom-delay", "--shard", "3/3", "--out", dir},
		{"exp", "run", "sweep-telecom-delay", "--shard", "0/3"},
		{"exp", "slurm", "sweep-telecom-delay", "--shards", "0"},
	} {
		if _, stderr, code := runCLI(t, bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", bad, code, stderr)
		}
	}
}

// A simulator sweep shards and merges the same way, also with --seeds
// overriding the file (the merge finds the override in the shards).
func TestSimShardsMergeIdentical(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	if _, stderr, code := runCLI(t, "exp", "run", "sweep-wifi-loss", "--seeds", "1", "--quiet", "--out", single); code != 0 {
		t.Fatalf("exp run: %d %s", code, stderr)
	}
	var shards []string
	for i := range 3 {
		d := filepath.Join(dir, "shard"+strconv.Itoa(i))
		if _, stderr, code := runCLI(t, "exp", "run", "sweep-wifi-loss", "--seeds", "1", "--quiet", "--shard", strconv.Itoa(i)+"/3", "--out", d); code != 0 {
			t.Fatalf("shard %d: %d %s", i, code, stderr)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	if _, stderr, code := runCLI(t, append([]string{"exp", "merge", "--out", merged}, shards...)...); code != 0 {
		t.Fatalf("merge: %d %s", code, stderr)
	}
	sameTree(t, single, merged)
}
