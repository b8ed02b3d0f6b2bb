package docgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeRun prints "out of ARGS" and fails for the command "hetquic fail".
func fakeRun(_ context.Context, b Block) (string, error) {
	if b.Command == "hetquic fail" {
		return "", errors.New("exit status 1")
	}
	return "| out of " + strings.Join(b.Args[1:], ",") + " |   \n\n\n", nil
}

const doc = "# T\n\nintro\n<!-- gen: hetquic exp run 'a b' --md -->\nold text\n<!-- /gen -->\n\n" +
	"```md\n<!-- gen: hetquic in a fence -->\n```\n" +
	"tail\n"

func TestStaleBlockIsReportedAndRewritten(t *testing.T) {
	out, stale, err := Update(context.Background(), "d.md", doc, Options{Run: fakeRun})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(doc, "old text\n", "| out of exp,run,a b,--md |\n", 1)
	if out != want {
		t.Errorf("rewritten doc:\n%s\nwant:\n%s", out, want)
	}
	if len(stale) != 1 || stale[0].Line != 4 || stale[0].Command != "hetquic exp run 'a b' --md" {
		t.Errorf("stale = %+v, want the block of line 4", stale)
	}
	// The rewritten doc is fresh: a second pass changes nothing.
	again, stale, err := Update(context.Background(), "d.md", out, Options{Run: fakeRun})
	if err != nil || len(stale) != 0 || again != out {
		t.Errorf("second pass: stale %v, err %v, changed %v", stale, err, again != out)
	}
}

func TestMatchLimitsTheBlocks(t *testing.T) {
	d := "<!-- gen: hetquic fail -->\nold\n<!-- /gen -->\n<!-- gen: hetquic ok -->\nold\n<!-- /gen -->\n"
	out, stale, err := Update(context.Background(), "d.md", d, Options{Run: fakeRun, Match: "ok"})
	if err != nil || len(stale) != 1 || stale[0].Line != 4 || !strings.Contains(out, "hetquic fail -->\nold\n") {
		t.Errorf("stale %+v, err %v, doc:\n%s", stale, err, out)
	}
}

func TestFailingCommandNamesFileAndLine(t *testing.T) {
	d := "a\n\n<!-- gen: hetquic fail -->\n<!-- /gen -->\n"
	_, _, err := Update(context.Background(), "x/README.md", d, Options{Run: fakeRun})
	if err == nil || !strings.HasPrefix(err.Error(), "x/README.md:3: hetquic fail: exit status 1") {
		t.Errorf("err = %v", err)
	}
}

func TestMeasuredBlocks(t *testing.T) {
	good := "<!-- gen measured: hetquic pcm failover --trials 8 -->\nMeasured 2026-11-24 with `hetquic pcm failover --trials 8`, load average 3.1\n\n| x |\n<!-- /gen -->\n"
	bad := "<!-- gen measured: go test -bench X ./sim -->\n| 1.2 µs |\n<!-- /gen -->\n"
	never := func(context.Context, Block) (string, error) {
		t.Fatal("a measured block ran without Measured")
		return "", nil
	}
	if _, stale, err := Update(context.Background(), "m.md", good+bad, Options{Run: never}); err != nil {
		t.Fatal(err)
	} else if len(stale) != 1 || stale[0].Line != 6 ||
		!strings.Contains(stale[0].Reason, "a date") || !strings.Contains(stale[0].Reason, "go test -bench X ./sim") || !strings.Contains(stale[0].Reason, "load") {
		t.Errorf("stale = %+v, want line 6 missing date, command and load", stale)
	}
	stamp := func(b Block) string { return "Measured 2026-11-24 with `" + b.Command + "`; load average: 1.00" }
	out, stale, err := Update(context.Background(), "m.md", bad, Options{Run: fakeRun, Measured: true, Stamp: stamp})
	if err != nil || len(stale) != 1 {
		t.Fatalf("stale %v err %v", stale, err)
	}
	if _, stale, _ := Update(context.Background(), "m.md", out, Options{Run: fakeRun}); len(stale) != 0 {
		t.Errorf("a regenerated measured block fails the check: %+v\n%s", stale, out)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ doc, err string }{
		{"x\n<!-- gen: hetquic a -->\nbody\n", "t.md:2: gen block is never closed"},
		{"<!-- /gen -->\n", "t.md:1: <!-- /gen --> without an opening marker"},
		{"<!-- gen: a -->\n<!-- gen: b -->\n<!-- /gen -->\n", "t.md:2: gen block opened inside"},
		{"<!-- gen hetquic a -->\n", "t.md:1: malformed gen marker"},
		{"<!-- gen: hetquic 'a -->\n<!-- /gen -->\n", "t.md:1: unterminated quote"},
	} {
		if _, err := Parse("t.md", tc.doc); err == nil || !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("%q: err %v, want %q", tc.doc, err, tc.err)
		}
	}
	// Fences: a longer fence closes only with as long a fence; ~~~ is not ```.
	d := "````\n```\n<!-- gen: hetquic no -->\n````\n~~~\n<!-- gen: hetquic no -->\n~~~\n<!-- gen: hetquic yes -->\n<!-- /gen -->\n"
	b, err := Parse("t.md", d)
	if err != nil || len(b) != 1 || !reflect.DeepEqual(b[0].Args, []string{"hetquic", "yes"}) || b[0].Line != 8 {
		t.Errorf("got %+v, %v", b, err)
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"README.md", "docs/a/b.md", "pkg/README.md", "pkg/testdata/x.md", ".git/y.md", "results/r/report.md", "pkg/x.go"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find(root)
	want := []string{"README.md", "docs/a/b.md", "pkg/README.md"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Find = %v, %v; want %v", got, err, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(doc)
	f.Add("<!-- gen measured: x -->\n<!-- /gen -->\n")
	f.Fuzz(func(t *testing.T, d string) {
		blocks, err := Parse("f.md", d)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Regenerating with bodies unchanged gives the doc back.
		same := func(_ context.Context, b Block) (string, error) { return b.Body, nil }
		out, _, err := Update(context.Background(), "f.md", d, Options{Run: same, Measured: false})
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) > 0 && out != d && normalizedEverywhere(blocks) {
			t.Fatalf("identity update changed the doc:\n%q\n%q", d, out)
		}
	})
}

// normalizedEverywhere: bodies already in normal form regenerate unchanged.
func normalizedEverywhere(bs []Block) bool {
	for _, b := range bs {
		if normalize(b.Body) != b.Body {
			return false
		}
	}
	return true
}
