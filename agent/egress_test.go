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
	ts := startServer(t, "", func(c *ServerConfig) {
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

// TestInternalRanges pins what counts as internal, row by row.
func TestInternalRanges(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		internal bool
	}{
		{"169.254.169.254", true}, {"127.0.0.1", true}, {"127.8.9.1", true}, {"10.1.2.3", true},
		{"172.16.0.1", true}, {"172.32.0.1", false}, {"192.168.1.1", true}, {"100.64.0.1", true},
		{"100.100.100.200", true}, {"100.128.0.1", false}, {"0.0.0.0", true}, {"224.0.0.1", true},
		{"255.255.255.255", true}, {"168.63.129.16", true}, {"192.0.0.192", true}, {"8.8.8.8", false},
		{"93.184.216.34", false}, {"::1", true}, {"::", true}, {"fe80::1", true}, {"fe80::1%eth0", true},
		{"fd00:ec2::254", true}, {"fc00::1", true}, {"ff02::1", true}, {"::ffff:169.254.169.254", true},
		{"::ffff:8.8.8.8", false}, {"64:ff9b::a9fe:a9fe", true}, {"64:ff9b::808:808", false},
		{"2001:4860:4860::8888", false}, {"64:ff9b:1::1", true},
	} {
		if got := internalWhat(netip.MustParseAddr(tc.addr)) != ""; got != tc.internal {
			t.Errorf("%s: internal %v, want %v", tc.addr, got, tc.internal)
		}
	}
}

// TestParseAllowInternal: addresses and prefixes; typos are errors.
func TestParseAllowInternal(t *testing.T) {
	ps, err := ParseAllowInternal([]string{"10.1.2.3", "192.168.0.0/24", "fd00::5", "::ffff:10.9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ps); got != "[10.1.2.3/32 192.168.0.0/24 fd00::5/128 10.9.9.9/32]" {
		t.Fatalf("%s", got)
	}
	for _, bad := range []string{"192.168.1.7/24", "app.test", "10.0.0.0/33", "fe80::1%eth0", ""} {
		if _, err := ParseAllowInternal([]string{bad}); err == nil || !strings.Contains(err.Error(), "allow_internal") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
