package purecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package p\n\nimport (\n\t\"math\"\n\t\"os\"\n)\n\nvar _ = math.Pi\nvar _ = os.Args\n")
	write("a_test.go", "package p\n\nimport \"net\"\n\nvar _ net.Conn\n")
	bad, err := Check(dir, "math")
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], `"os"`) {
		t.Fatalf("Check = %q, want only the os import (test files are exempt)", bad)
	}
	if bad, _ := Check(dir, "math", "os"); len(bad) != 0 {
		t.Fatalf("allowed imports reported: %q", bad)
	}
	if _, err := Check(t.TempDir()); err == nil {
		t.Fatal("an empty directory passed")
	}
}
