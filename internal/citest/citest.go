// Package citest makes a test that cannot run here say so honestly: on a
// developer's machine it skips (no root, no TUN, no MPTCP, no curl), and
// under CI — HETQUIC_CI=1, which .ci/run sets after installing what the
// tests need — the same missing piece fails the test, so CI never passes
// by skipping what it is meant to run.
package citest

import (
	"os"
	"testing"
)

// Env is the variable that marks a CI run.
const Env = "HETQUIC_CI"

// CI reports whether the tests run under CI (HETQUIC_CI=1).
func CI() bool { return os.Getenv(Env) == "1" }

// Skip skips t with reason, or fails it under CI, where what it needs must
// be there.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if CI() {
		t.Fatalf("%s=1 and this test cannot run: %s", Env, reason)
		return
	}
	t.Skip(reason)
}

// Require is Skip(t, what+" is not available") unless ok.
func Require(t testing.TB, what string, ok bool) {
	t.Helper()
	if !ok {
		Skip(t, what+" is not available")
	}
}
