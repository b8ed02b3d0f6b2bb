package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/results"
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
			files[rel] = withoutProvenance(t, rel, data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// withoutProvenance is a written file less what names the process that
// wrote it (the provenance: version, cores, load), which two runs of the
// same experiment need not share.
func withoutProvenance(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	switch filepath.Base(name) {
	case "summary.json":
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := m["provenance"]; !ok {
			t.Fatalf("%s has no provenance", name)
		}
		delete(m, "provenance")
		out, _ := json.Marshal(m)
		return out
	case "report.md":
		var keep []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, results.ProvenancePrefix) {
				keep = append(keep, l)
			}
		}
		return []byte(strings.Join(keep, "\n"))
	}
	return data
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
	t.Parallel() // subprocesses only: independent of every other test
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	if _, stderr, code := runCLI(t, "exp", "run", "sweep-telecom-delay", "--quiet", "--out", single); code != 0 {
		t.Fatalf("exp run: %d %s", code, stderr)
	}
	out := filepath.Join(dir, "array")
	const n = 3
	script, stderr, code := runCLI(t, "exp", "slurm", "sweep-telecom-delay", "--shards", strconv.Itoa(n), "--out", out, "--hetquic", hetquicBin)
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
		cmd.Env = append(os.Environ(), env...)
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
	t.Parallel() // subprocesses only: independent of every other test
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

// shardsMergeIdentical runs spec (with extra flags) in one process and in
// 3 shards under dir, merges the shards with shard 1 given twice, and
// checks that the merge wrote what the one process did, byte for byte.
func shardsMergeIdentical(t *testing.T, spec, dir string, extra ...string) {
	t.Helper()
	run := func(args ...string) {
		t.Helper()
		if _, stderr, code := runCLI(t, append(args, extra...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	single := filepath.Join(dir, "single")
	run("exp", "run", spec, "--quiet", "--out", single)
	var shards []string
	for i := range 3 {
		d := filepath.Join(dir, "shard"+strconv.Itoa(i))
		run("exp", "run", spec, "--quiet", "--shard", strconv.Itoa(i)+"/3", "--out", d)
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	if _, stderr, code := runCLI(t, append([]string{"exp", "merge", "--out", merged}, append(shards, shards[1])...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	sameTree(t, single, merged)
}

// videoSpec is a small QC-MAB experiment (mode video): 2 variants × 3
// seeds of 5 s, with replay's logger runs; sweep, when not empty, is its
// sweep: block.
func videoSpec(t *testing.T, dir, name, sweep string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	src := "name: " + name + `
mode: video
figure: "4.5"
scenario: {kind: lattice, ap_spacing_m: 20, area_m: 60, speed_mps: 10}
duration_s: 5
seeds: 3
replay: true
variants:
  - {label: QC-MAB, controller: qcmab, gamma: 0.99}
  - {label: Peekaboo, controller: peekaboo}
` + sweep
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A video (QC-MAB) experiment, with and without a sweep, shards and merges
// into what one process writes, byte for byte: by hand (a shard given
// twice counts once; --seeds travels in the shards) and through the
// generated Slurm job array.
func TestVideoShardsMergeIdentical(t *testing.T) {
	t.Parallel() // subprocesses only: independent of every other test
	dir := t.TempDir()
	plain := videoSpec(t, dir, "qcmab-shard", "")
	swept := videoSpec(t, dir, "qcmab-shard-sweep", "sweep:\n  params:\n    scenario.speed_mps: [5, 10]\n")
	shardsMergeIdentical(t, plain, filepath.Join(dir, "plain"), "--seeds", "2")
	shardsMergeIdentical(t, swept, filepath.Join(dir, "qcmab-shard-sweep"))
	if _, err := os.Stat(filepath.Join(dir, "qcmab-shard-sweep", "single", "sweep.csv")); err != nil {
		t.Fatalf("the sweep wrote no sweep.csv: %v", err)
	}

	out := filepath.Join(dir, "array")
	script, stderr, code := runCLI(t, "exp", "slurm", swept, "--shards", "2", "--out", out, "--hetquic", hetquicBin)
	if code != 0 {
		t.Fatalf("exp slurm: %d %s", code, stderr)
	}
	sh := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_ID=1", "MERGE=1"} {
		cmd := exec.Command("bash", sh)
		cmd.Env = append(os.Environ(), env)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bash job.sh %s: %v\n%s", env, err, b)
		}
	}
	sameTree(t, filepath.Join(dir, "qcmab-shard-sweep", "single"), out)
}

// Mode agent refuses --shard, exp slurm, exp merge and a sweep: block with
// exit code 2 and one line saying why.
func TestNoShardModes(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent-sweep.yaml")
	if err := os.WriteFile(agent, []byte("name: a\nmode: agent\nsweep: {params: {x: [1, 2]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exp", "slurm", "agent-loss", "--shards", "2"}, "mode agent does not shard or sweep: it runs real agents on loopback one at a time"},
		{[]string{"exp", "validate", agent}, "sweep: mode agent does not shard"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != 2 || len(lines) != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A ride evaluation (RIDE and the baselines on 40 frames of the test
// video), with and without a sweep over seed (seeds × policies),
// shards and merges into what one process writes, byte for byte.
func TestRideShardsMergeIdentical(t *testing.T) {
	t.Parallel() // subprocesses only: independent of every other test
	dir := t.TempDir()
	pol, err := os.ReadFile("../../ride/policies/ride-seed1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ride.json"), pol, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "mode: ride\nseed: 1\nride: {policy: ride.json, frames: 40}\n"
	plain, swept := filepath.Join(dir, "ride-tiny.yaml"), filepath.Join(dir, "ride-tiny-sweep.yaml")
	if err := os.WriteFile(plain, []byte("name: ride-tiny\n"+spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swept, []byte("name: ride-tiny-sweep\n"+spec+"sweep: {params: {seed: [1, 2]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shardsMergeIdentical(t, plain, filepath.Join(dir, "plain"))
	shardsMergeIdentical(t, swept, filepath.Join(dir, "swept"))
	var sum struct {
		Points []struct {
			Policies []struct{ Policy string } `json:"policies"`
		} `json:"points"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "swept", "single", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil || len(sum.Points) != 2 || len(sum.Points[1].Policies) != 4 {
		t.Fatalf("summary: %v, %+v; want 2 points of 4 policies", err, sum)
	}
}
