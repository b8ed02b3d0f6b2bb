package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/sim/cc"
	"github.com/hetquic/hetquic/sim/sched"
)

// TestSimComponentsMarkdown: the Markdown table the docs generate their
// counts from states as many schedulers and congestion controllers as the
// simulator registers, and a stray argument is bad input.
func TestSimComponentsMarkdown(t *testing.T) {
	out, stderr, code := runCLI(t, "sim", "components", "--md")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"| component | how many | names |",
		fmt.Sprintf("| schedulers | %d | `%s` |", len(sched.Names()), strings.Join(sched.Names(), "`, `")),
		fmt.Sprintf("| congestion controllers | %d | `%s` |", len(cc.Names()), strings.Join(cc.Names(), "`, `")),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, stderr, code := runCLI(t, "sim", "components", "extra"); code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("stray argument: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
}
