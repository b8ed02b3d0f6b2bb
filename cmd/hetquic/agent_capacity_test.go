package main

import (
	"strings"
	"testing"
)

// TestAgentCapacity runs "hetquic agent capacity" at a tiny size: a real
// ct-server process and three two-path devices; the command exits 1 if a
// path did not stay up or a request failed or was short. Correctness only:
// its speeds are BENCHMARKS.md's measured block. About 6 s; skipped with
// -short.
func TestAgentCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("capacity: about 6 s")
	}
	stdout, stderr, code := runCLI(t, "agent", "capacity", "--devices", "3", "--idle", "1s", "--active", "2s", "--interval", "100ms")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "3 devices: ") || !strings.Contains(stdout, "6 of 6 paths up") || !strings.Contains(stdout, "(0 failed)") {
		t.Fatalf("output: %s", stdout)
	}
}

// TestAgentCapacityBadInput: a bad device count or duration is one line
// and exit 2.
func TestAgentCapacityBadInput(t *testing.T) {
	for _, args := range [][]string{{"--devices", "0"}, {"--devices", "10,x"}, {"--devices", "70000"}, {"--idle", "0s"}} {
		_, stderr, code := runCLI(t, append([]string{"agent", "capacity"}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
