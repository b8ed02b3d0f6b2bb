package clientfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
)

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := write("s.yaml", `listen: 0.0.0.0:4433
self_signed: true
allow: [app:80]
prefetch: [http://app/x]
limits: {max_streams: 10, rate_bytes_per_sec: 1000000}
clients:
  - {id: alice, token: 0123456789abcdef01, limits: {max_bytes: 100}}
metrics: 127.0.0.1:9100
`)
	f, err := server.LoadFile(srv)
	if err != nil {
		t.Fatal(err)
	}
	if f.Limits.MaxStreams != 10 || f.Clients[0].Limits.MaxBytes != 100 || f.Allow[0] != "app:80" {
		t.Fatalf("%+v", f)
	}
	cli := write("c.yaml", `server: ct.example:4433
token_file: /tmp/t
paths: [wifi=192.168.1.2, lte=10.0.0.2]
listen: [127.0.0.1:8080, 127.0.0.1:8081]
conns_per_path: 2
scheduler: priority
app_rule: port
priority: {"8080": 4}
cache: {dir: /tmp/c, max_bytes: 1000000, default_ttl_s: 60}
`)
	c, err := Load(cli)
	if err != nil {
		t.Fatal(err)
	}
	if c.Priority["8080"] != 4 || len(c.Paths) != 2 || c.ConnsPerPath != 2 || c.Cache.MaxBytes != 1000000 {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []struct{ name, text, want string }{
		{"s1.yaml", "listen: x\nbogus: 1\n", `unknown field "bogus"`},
		{"s2.yaml", "clients: [{id: a, token: short}]\n", "at least 16"},
		{"c1.yaml", "server: x\nstall_timeout_ms: -1\n", "timeouts"},
		{"c2.yaml", "cache: {dir: ''}\n", "cache needs"},
		{"c3.yaml", "priority: {a: 0}\n", "priority"},
		{"c4.yaml", "paths: 3\n", "c4.yaml:1"},
		{"c5.yaml", fmt.Sprintf("conns_per_path: %d\n", wire.MaxLanes+1), fmt.Sprintf("conns_per_path %d: want 1 to %d", wire.MaxLanes+1, wire.MaxLanes)},
	} {
		p := write(bad.name, bad.text)
		var err error
		if strings.HasPrefix(bad.name, "s") {
			_, err = server.LoadFile(p)
		} else {
			_, err = Load(p)
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", bad.name, err, bad.want)
		}
	}
}
