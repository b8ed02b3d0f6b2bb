package agent

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/hetquic/hetquic/agent/server"
)

// fakeResolver answers from a table and counts lookups; what it answers
// may change between lookups (a DNS rebinding).
type fakeResolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups++
	if as, ok := r.names[host]; ok {
		return as, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	r.names[host] = as
}

// logRecorder keeps the server's log lines for the test to check.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	return len(p), nil
}

func (l *logRecorder) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// TestEgressInternal: a name such as meta.test → 169.254.169.254 on the
// allow-list is refused with a clear message (403 for the app, the
// address and range in the log, a warning at start), for GET and CONNECT;
// a name resolving to an address allow_internal lists is dialled at the
// address that was checked (the fake name cannot be resolved by the
// system, so a 200 proves it was not looked up again); a mixed answer
// dials only the allowed address.
func TestEgressInternal(t *testing.T) {
	up := startUpstream(t)
	_, port, _ := net.SplitHostPort(up.hostport)
	res := &fakeResolver{names: map[string][]netip.Addr{}}
	res.set("meta.test", "169.254.169.254")
	res.set("app.test", "127.0.0.1")
	res.set("mixed.test", "169.254.169.254", "127.0.0.1")
	rec := &logRecorder{}
	ts := startServer(t, "", func(c *server.Config) {
		c.Resolver = res
		c.AllowInternal = []string{"127.0.0.1"}
		c.Log = logTo(rec)
	}, "meta.test:"+port, "app.test:"+port, "mixed.test:"+port)
	tc := startClient(t, ts, 1, true, nil)
	resp, body := tc.get(t, "http://meta.test:"+port+"/bytes/10")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "meta.test:"+port+" resolves to an internal address") {
		t.Fatalf("meta.test: %d %q", resp.StatusCode, body)
	}
	want := "upstream meta.test resolves to 169.254.169.254, an internal address (link-local, cloud metadata 169.254.169.254): refused (list it in allow_internal to allow it)"
	if !rec.has(want) {
		t.Errorf("log lacks %q:\n%s", want, strings.Join(rec.lines, ""))
	}
	if !rec.has("allow-list entry meta.test:" + port + " resolves to 169.254.169.254") {
		t.Error("no warning at start for meta.test")
	}
	conn, err := net.Dial("tcp", tc.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT meta.test:%s HTTP/1.1\r\nHost: meta.test:%s\r\n\r\n", port, port)
	if resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT meta.test: %v %v", resp, err)
	}
	for _, host := range []string{"app.test", "mixed.test"} {
		if resp, body := tc.get(t, "http://"+host+":"+port+"/bytes/10"); resp.StatusCode != 200 || len(body) != 10 {
			t.Fatalf("%s: %d %q", host, resp.StatusCode, body)
		}
	}
	if up.requests.Load() != 2 {
		t.Fatalf("upstream got %d requests, want 2", up.requests.Load())
	}
}

func logTo(w *logRecorder) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
