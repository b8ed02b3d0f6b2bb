package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/agent/pathchoice"
)

// TestServerFlagsOverFile: a flag given overrides the file (a zero value
// too), a flag left out keeps the file's value, --allow extends the file's
// allow-list.
func TestServerFlagsOverFile(t *testing.T) {
	dir := t.TempDir()
	sy := filepath.Join(dir, "s.yaml")
	os.WriteFile(sy, []byte("listen: 127.0.0.1:1\nallow: [a:80]\nmemory_budget: 1000\nmetrics: 127.0.0.1:9\n"), 0o600)
	fs := flag.NewFlagSet("s", flag.ContinueOnError)
	sf := registerServerFlags(fs)
	if err := fs.Parse([]string{"--config", sy, "--allow", "b:80,c:81", "--memory-budget", "0", "--self-signed", "--token", "x"}); err != nil {
		t.Fatal(err)
	}
	f, err := sf.Load()
	if err != nil {
		t.Fatal(err)
	}
	if f.Listen != "127.0.0.1:1" || f.Metrics != "127.0.0.1:9" || f.MemoryBudget != 0 || !f.SelfSigned ||
		!slices.Equal(f.Allow, []string{"a:80", "b:80", "c:81"}) || f.Token != "x" {
		t.Fatalf("%+v", f)
	}
}

// TestClientFlagsOverFile: flags over the client's file, a world-readable
// token file warned about, the client's defaults filling what neither gave,
// and a bad flag value refused.
func TestClientFlagsOverFile(t *testing.T) {
	dir := t.TempDir()
	cy := filepath.Join(dir, "c.yaml")
	os.WriteFile(cy, []byte("server: ct.example:4433\ntoken: t0\npaths: [wifi=10.0.0.2]\nstall_timeout_ms: 500\n"), 0o600)
	tf := filepath.Join(dir, "tok")
	os.WriteFile(tf, []byte("t1\n"), 0o644)
	fs := flag.NewFlagSet("c", flag.ContinueOnError)
	cf := registerClientFlags(fs)
	if err := fs.Parse([]string{"--config", cy, "--token-file", tf, "--paths", "a=10.0.0.3,b=10.0.0.4", "--stall-timeout", "2s", "--cache-dir", dir}); err != nil {
		t.Fatal(err)
	}
	var warned []string
	c, err := cf.Load(func(w string) { warned = append(warned, w) })
	if err != nil {
		t.Fatal(err)
	}
	if c.Token != "t1" || len(c.Paths) != 2 || c.StallTimeoutMS != 2000 || c.ServerName != "ct.example" ||
		c.Scheduler != pathchoice.DefaultScheduler || c.Listen[0] != "127.0.0.1:8080" || c.Cache == nil || c.Cache.MaxBytes != 256<<20 {
		t.Fatalf("%+v", c)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "mode 0644") {
		t.Fatalf("warnings %q", warned)
	}
	for _, bad := range [][]string{{"--stall-timeout", "fast"}, {"--conns-per-path", "two"}} {
		fs := flag.NewFlagSet("c", flag.ContinueOnError)
		fs.SetOutput(discardWriter{})
		registerClientFlags(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
