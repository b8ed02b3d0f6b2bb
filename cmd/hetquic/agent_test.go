package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentToken: "agent token FILE" writes a private 256-bit token once.
func TestAgentToken(t *testing.T) {
	name := filepath.Join(t.TempDir(), "ct.token")
	if _, stderr, code := runCLI(t, "agent", "token", name); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, err := os.Stat(name)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st.Mode(), err)
	}
	b, _ := os.ReadFile(name)
	if tok := strings.TrimSpace(string(b)); len(tok) != 43 {
		t.Fatalf("token %q", tok)
	}
	if _, stderr, code := runCLI(t, "agent", "token", name); code != 2 || !strings.Contains(stderr, "exists") {
		t.Fatalf("overwrite: exit %d: %s", code, stderr)
	}
}

// TestAgentServerBadInput: weak tokens and bad flags are one-line errors
// with exit code 2.
func TestAgentServerBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "server", "--self-signed", "--state-dir", t.TempDir(), "--allow", "a:80", "--token", "passwordpassword"}, "token too weak"},
		{[]string{"agent", "server", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"agent", "server", "--self-signed", "--allow", "a:80"}, "hetquic agent token FILE"},
		{[]string{"agent", "client", "--server", "127.0.0.1:1", "--token", "t", "--paths", "127.0.0.1", "--ca", "/nonexistent.pem"}, "--ca: ca:"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || !strings.Contains(lines[len(lines)-1], tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
