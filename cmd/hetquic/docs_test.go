package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/internal/docgen"
)

// TestDocsCheck runs "hetquic docs" on a doc whose block is stale, then
// fresh, then names a failing command.
func TestDocsCheck(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "d.md")
	stale := "# d\n\n<!-- gen: hetquic exp list -->\npcm-table5 made up\n<!-- /gen -->\n"
	if err := os.WriteFile(doc, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "docs", "--check", doc)
	if code != 1 || !strings.Contains(stderr, doc+":3: hetquic exp list: differs") {
		t.Fatalf("stale doc: exit %d, stderr %q; want 1 naming %s:3", code, stderr, doc)
	}
	if data, _ := os.ReadFile(doc); string(data) != stale {
		t.Fatal("--check rewrote the doc")
	}
	if _, stderr, code := runCLI(t, "docs", doc); code != 0 {
		t.Fatalf("regenerating: exit %d, stderr %q", code, stderr)
	}
	data, _ := os.ReadFile(doc)
	list, _, _ := runCLI(t, "exp", "list")
	if want := strings.Replace(stale, "pcm-table5 made up\n", list, 1); string(data) != want {
		t.Fatalf("regenerated doc:\n%s\nwant:\n%s", data, want)
	}
	if _, stderr, code := runCLI(t, "docs", "--check", doc); code != 0 {
		t.Fatalf("fresh doc fails the check: exit %d, stderr %q", code, stderr)
	}

	bad := filepath.Join(dir, "bad.md")
	os.WriteFile(bad, []byte("x\n<!-- gen: hetquic exp run no-such-exp --md -->\n<!-- /gen -->\n"), 0o644)
	_, stderr, code = runCLI(t, "docs", "--check", bad)
	if code == 0 || !strings.Contains(stderr, bad+":2: hetquic exp run no-such-exp --md: ") || !strings.Contains(stderr, "no-such-exp") {
		t.Errorf("failing command: exit %d, stderr %q; want an error naming %s:2", code, stderr, bad)
	}
}

// TestCaptureNests: a doc block may run a command that itself captures
// another's output (reproduce runs exp run); each level gets its own.
func TestCaptureNests(t *testing.T) {
	var inner string
	outer, err := captureOutput(func() error {
		fmt.Println("outer before")
		var err error
		inner, err = captureOutput(func() error { fmt.Println("inner"); return nil })
		fmt.Println("outer after")
		return err
	})
	if err != nil || outer != "outer before\nouter after\n" || inner != "inner\n" {
		t.Errorf("outer %q, inner %q, err %v", outer, inner, err)
	}
}

// TestShellBlockMarkdown: a measured shell command's output is fenced as
// text unless it holds a Markdown table, which is kept to render as one.
func TestShellBlockMarkdown(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
	}{
		{`printf 'ok 1.2 s\n'`, "```text\nok 1.2 s\n```\n"},
		{`printf 'cap\n\n| a | b |\n|---|---|\n| 1 | 2 |\n'`, "cap\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"},
		{`printf '| not a table |\n'`, "```text\n| not a table |\n```\n"},
	} {
		b := docgen.Block{Command: c.cmd, Args: strings.Fields(c.cmd), Measured: true}
		got, err := runDocCommand(t.Context(), b)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
}

// TestDocsArgs: docs gives reproduce a worker per core unless the block
// names its own; other commands run as written.
func TestDocsArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"reproduce --paper thesis-ch2 --md", "reproduce --paper thesis-ch2 --md --workers 4"},
		{"reproduce --md --workers 1", "reproduce --md --workers 1"},
		{"reproduce --md --workers=3", "reproduce --md --workers=3"},
		{"exp run pcm-table5 --md", "exp run pcm-table5 --md"},
		{"sim components --md", "sim components --md"},
	} {
		if got := strings.Join(docsArgs(strings.Fields(tc.in), 4), " "); got != tc.want {
			t.Errorf("docsArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMemoRun: a deterministic block's command runs once per docs run,
// a measured block's every time, and a failure is not remembered.
func TestMemoRun(t *testing.T) {
	calls := map[string]int{}
	fail := true
	run := memoRun(func(_ context.Context, b docgen.Block) (string, error) {
		calls[b.Command]++
		if b.Command == "flaky" && fail {
			fail = false
			return "", fmt.Errorf("failed once")
		}
		return fmt.Sprintf("%s #%d", b.Command, calls[b.Command]), nil
	})
	ctx := context.Background()
	for range 3 {
		if out, _ := run(ctx, docgen.Block{Command: "a"}); out != "a #1" {
			t.Errorf("deterministic block: got %q, want the first run's output", out)
		}
		run(ctx, docgen.Block{Command: "m", Measured: true})
	}
	if calls["m"] != 3 {
		t.Errorf("measured block ran %d times in 3 asks, want 3", calls["m"])
	}
	if _, err := run(ctx, docgen.Block{Command: "flaky"}); err == nil {
		t.Fatal("flaky: want the first run's error")
	}
	if out, err := run(ctx, docgen.Block{Command: "flaky"}); err != nil || out != "flaky #2" {
		t.Errorf("flaky after a failure: %q, %v; want a second run", out, err)
	}
}
