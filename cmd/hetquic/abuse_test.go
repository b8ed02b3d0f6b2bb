package main

import (
	"strings"
	"testing"
)

// TestAgentAbuse runs "hetquic agent abuse" at its CI size: a real
// ct-server process under the default configuration, one misbehaving
// authenticated client and one good one; the command exits 1 if ct-server's
// peak RSS or the good client's p99 breaks its bound, or a byte is wrong
// (agent/README.md, "Abuse"). About 12 s; skipped with -short. Under the
// race detector ct-server's memory is several times larger (shadow
// memory) and everything runs 5–10× slower on CPU, so the RSS and p99
// bounds are raised there (what the test still checks: memory stays
// bounded and every byte the good client gets is right).
func TestAgentAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse test: about 12 s")
	}
	args := []string{"agent", "abuse"}
	if raceEnabled {
		args = append(args, "--max-rss-mib", "2000", "--max-p99", "15s")
	}
	stdout, stderr, code := runCLI(t, args...)
	t.Log(strings.TrimSpace(stdout))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
