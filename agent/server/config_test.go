package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokensDir: one client per file, dotfiles skipped, a world-readable
// file warned about.
func TestTokensDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "alice"), []byte("tokA\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "bob"), []byte("tokB"), 0o640)
	os.WriteFile(filepath.Join(dir, ".bob.swp"), []byte("junk"), 0o600)
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	var warned int
	got, err := File{TokensDir: dir, Token: "tokD"}.Authorized(func(string) { warned++ })
	if err != nil {
		t.Fatal(err)
	}
	want := []ClientAuth{{ID: "default", Token: "tokD"}, {ID: "alice", Token: "tokA"}, {ID: "bob", Token: "tokB"}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || warned != 1 {
		t.Fatalf("%+v, %d warnings", got, warned)
	}
	if _, err := (File{}).Authorized(func(string) {}); err == nil || !strings.Contains(err.Error(), "hetquic agent token FILE") {
		t.Fatalf("no clients: %v", err)
	}
	if _, err := (File{TokensDir: filepath.Join(dir, "none")}).Authorized(func(string) {}); err == nil || !strings.Contains(err.Error(), "tokens_dir") {
		t.Fatalf("missing dir: %v", err)
	}
}
