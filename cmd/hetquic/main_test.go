package main

import (
	"bytes"
	"fmt"
	"github.com/hetquic/hetquic/internal/mode"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hetquicBin is the hetquic binary that every test running the real
// command starts: built once by TestMain, without the race detector (the
// in-process tests of this package and of the packages it calls run under
// it), so that the subprocesses' simulations take seconds, not minutes.
var hetquicBin string

// TestMain builds hetquicBin into a temporary directory, runs the tests
// and removes it.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hetquic-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hetquic tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	hetquicBin = filepath.Join(dir, "hetquic")
	build := exec.Command("go", "build", "-o", hetquicBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "hetquic tests: go build:", err)
		return 1
	}
	return m.Run()
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(hetquicBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestBadInputIsOneLineAndExitCode2(t *testing.T) {
	t.Parallel() // subprocesses only: independent of every other test
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exp", "run", "testdata/bad-loss-exp.yaml"}, "bad-loss.yaml: paths[0].down.loss: 1.5 is outside [0, 1]"},
		{[]string{"exp", "validate", "testdata/unknown-field.yaml"}, "unknown-field.yaml:4: unknown field \"stratgies\""},
		{[]string{"exp", "run", "no-such-experiment"}, "no-such-experiment: no such file, nor a built-in experiment"},
		{[]string{"exp", "run", "pcm-table5", "--workers"}, "flag needs an argument"},
		{[]string{"exp", "frobnicate"}, "unknown subcommand \"frobnicate\""},
		{[]string{"nonsense"}, "unknown command \"nonsense\""},
		{[]string{"emu", "measure", "--mode", "loss,dealy"}, "--mode: \"dealy\" is not delay, rate, loss or forward"},
		{[]string{"emu", "measure", "--mode", "rate", "--rate-mbps", "10,x"}, "--rate-mbps: \"x\" is not a number ≥ 0"},
		{[]string{"agent", "experiment", "aggregate", "--repeat", "0"}, "--repeat 0 out of [1, 100]"},
		{[]string{"agent", "experiment", "loss", "--conns-per-path", "9"}, "--conns-per-path 9 out of [1, 8]"},
		{[]string{"agent", "experiment", "matrix", "--mptcp-cc", "cubic"}, "agent.mptcp_cc: only with agent.mptcp"},
		{[]string{"agent", "experiment", "matrix", "--mptcp", "--mptcp-cc", "CUBIC"}, `agent.mptcp_cc: "CUBIC" is not a congestion control name`},
		{[]string{"agent", "experiment", "stripe", "--scenario", "testdata/stripe-no-rate.yaml"}, "paths[1] (b).down.rate_mbps: missing; stripe compares goodput"},
		{[]string{"agent", "experiment", "stripe", "--scenario", "testdata/negative-loss.yaml"}, "negative-loss.yaml: paths[0].down.loss: -0.01 is outside [0, 1]"},
		{[]string{"agent", "experiment", "stripe", "--scenario", "testdata/scenario-unknown-field.yaml"}, `scenario-unknown-field.yaml:5: unknown field "los"`},
		{[]string{"agent", "client", "--server", "127.0.0.1:1", "--token", "t", "--paths", "127.0.0.1", "--conns-per-path", "9"}, "connections per path 9: want 1 to 8"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "hetquic: ") || !strings.Contains(last, tc.want) {
			t.Errorf("%v: last stderr line %q, want it to contain %q", tc.args, last, tc.want)
		}
	}
}

func TestExpRunWritesResults(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runCLI(t, "exp", "run", "--out", dir, "pcm-model")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "psa-opt-lognormal") || !strings.Contains(stderr, "runs") {
		t.Errorf("no table or no progress:\n%s\n%s", stdout, stderr)
	}
	for _, f := range []string{"rounds.csv.gz", "summary.json", "report.md", "tct_per_round.png", "chosen_path.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestHelpAndList(t *testing.T) {
	stdout, _, code := runCLI(t, "help")
	if code != 0 || !strings.Contains(stdout, "exp") || !strings.Contains(stdout, "demo") {
		t.Errorf("help: %d %q", code, stdout)
	}
	// Help asked for goes to stdout (| less), a leaf command's as a group's.
	for _, args := range [][]string{{"exp", "run", "--help"}, {"exp", "-h"}, {"version", "-h"}, {"emu", "relay", "-h"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "Usage: hetquic ") || stderr != "" {
			t.Errorf("%v: %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	// exp -h lists every registered mode.
	stdout, _, _ = runCLI(t, "exp", "-h")
	for _, m := range mode.Names() {
		if modeSummaries[m] == "" || !strings.Contains(stdout, "\n  "+m+" ") {
			t.Errorf("exp -h: mode %s not listed with a summary", m)
		}
	}
	if _, stderr, code := runCLI(t, "demo", "extra-arg"); code != 2 || !strings.Contains(stderr, `demo takes no arguments, got "extra-arg"`) {
		t.Errorf("demo extra-arg: %d %q", code, stderr)
	}
	stdout, _, code = runCLI(t, "exp", "list")
	if code != 0 || !strings.Contains(stdout, "pcm-table5") || !strings.Contains(stdout, "pcm-window") {
		t.Errorf("exp list: %d %q", code, stdout)
	}
}

func TestAgentExperimentWritesChart(t *testing.T) {
	dir := t.TempDir()
	png, js := filepath.Join(dir, "prefetch.png"), filepath.Join(dir, "prefetch.json")
	stdout, stderr, code := runCLI(t, "agent", "experiment", "prefetch", "--scale", "0.01", "--png", png, "--json", js)
	if code != 0 || !strings.Contains(stdout, "prefetched") {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{png, js} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
