package abuse

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/origin"
)

// TestWithDefaults: zero fields take the CI size, given ones stay, and
// Only leaves out every other kind of abuse.
func TestWithDefaults(t *testing.T) {
	c := Config{Streams: 7, MaxP99: time.Second}.withDefaults()
	if c.Streams != 7 || c.Tunnels != Default.Tunnels || c.MaxP99 != time.Second || c.MaxRSSBytes != Default.MaxRSSBytes || c.Duration != Default.Duration {
		t.Fatalf("%+v", c)
	}
	if c := (Config{Only: "tunnels"}).withDefaults(); c.Streams != 0 || c.Hints != 0 || c.Handshakes != 0 || c.Tunnels != Default.Tunnels {
		t.Fatalf("only tunnels: %+v", c)
	}
	if c := (Config{Only: "streams"}).withDefaults(); c.Tunnels != 0 || c.Hints != 0 || c.Handshakes != 0 || c.Cycles != 0 || c.Streams != Default.Streams {
		t.Fatalf("only streams: %+v", c)
	}
	if c := (Config{Only: "cycles"}).withDefaults(); c.Tunnels != 0 || c.Streams != 0 || c.Hints != 0 || c.Handshakes != 0 || c.Cycles != defaultCycles {
		t.Fatalf("only cycles: %+v", c)
	}
}

// TestMarkdown: the README's table, the limit hits sorted, the verdict,
// and the growth per accepted one with Only.
func TestMarkdown(t *testing.T) {
	cfg := Default
	cfg.Cycles = 400
	r := &Report{Config: cfg, PeakRSS: 74 << 20, BaseRSS: 17 << 20, GoodReqs: 10, BytesOK: 2_000_000,
		P50: 4 * time.Millisecond, P99: 44 * time.Millisecond, Accepted: Counts{Conns: 8, Streams: 34, Tunnels: 32, Cycles: 90}, PeakReserved: 22 << 20,
		LimitHits: map[string]float64{"tunnels": 3, "buffer_bytes": 2, "zero": 0}, Elapsed: 12 * time.Second}
	var b bytes.Buffer
	r.Markdown(&b, "hetquic agent abuse --md", "1.00 2.00 3.00\n", time.Date(2026, 11, 24, 6, 46, 0, 0, time.UTC))
	s := b.String()
	for _, want := range []string{
		"Measured 2026-11-24 06:46 UTC with `hetquic agent abuse --md` (load: 1.00 2.00 3.00)",
		"| ct-server peak RSS (VmHWM) | 74 MiB (17 MiB before the abuse) | < 400 MiB |",
		"| good client: requests of 200 kB, p50 / p99 | 10, 4 ms / 44 ms | p99 < 2000 ms |",
		"| abuse: unread 5 MB CONNECT tunnels | 32 of 300 accepted |",
		"| abuse: short tunnels (1 MB each, read whole, closed) | 90 of 400 completed | memory_budget (replay buffers) |",
		"| ct-server memory reserved (`ct_server_reserved_bytes`), peak sampled | 22 MiB | memory_budget |",
		"(`ct_server_limit_hits_total`): buffer_bytes 2, tunnels 3. Run time 12 s; every bound held.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "growth per accepted") || strings.Contains(s, "zero") {
		t.Errorf("growth line or a zero limit without Only:\n%s", s)
	}
	r.Config.Only, r.Violations = "tunnels", []string{"p99 3s > 2s"}
	b.Reset()
	r.Markdown(&b, "x", "", time.Now())
	if s := b.String(); !strings.Contains(s, "| ct-server RSS growth per accepted unread tunnel | 0.86 MiB |") ||
		!strings.Contains(s, "**bounds broken: p99 3s > 2s**") || r.Passed() {
		t.Errorf("with Only and a violation:\n%s", s)
	}
}

// TestScrapeLimitHits reads ct_server_limit_hits_total by limit and
// nothing else.
func TestScrapeLimitHits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP ct_server_limit_hits_total x\n# TYPE ct_server_limit_hits_total counter\n"+
			"ct_server_limit_hits_total{limit=\"tunnels\"} 268\nct_server_limit_hits_total{limit=\"conns\"} 4\n"+
			"# TYPE ct_server_reserved_bytes gauge\nct_server_reserved_bytes 0\n")
	}))
	defer srv.Close()
	got := scrapeLimitHits(strings.TrimPrefix(srv.URL, "http://"))
	if len(got) != 2 || got["tunnels"] != 268 || got["conns"] != 4 {
		t.Fatalf("%v", got)
	}
	if got := scrapeLimitHits("127.0.0.1:1"); len(got) != 0 {
		t.Fatalf("unreachable: %v", got)
	}
}

// TestGetChecked: every byte is checked against the origin's pattern; a
// wrong byte, a short body and a refusal are errors.
func TestGetChecked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wrong":
			b := make([]byte, 1000)
			for i := range b {
				b[i] = origin.PatternByte(int64(i))
			}
			b[777]++
			w.Write(b)
		case "/refused":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			origin.Handler(nil).ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if n, err := getChecked(ctx, srv.Client(), srv.URL+"/bytes/100000", 100000); err != nil || n != 100000 {
		t.Fatalf("good: %d, %v", n, err)
	}
	for _, tc := range []struct {
		path string
		size int
		want string
	}{
		{"/wrong", 1000, "byte 777 wrong"},
		{"/bytes/500", 1000, "500 of 1000 bytes"},
		{"/refused", 10, "status 429"},
	} {
		if _, err := getChecked(ctx, srv.Client(), srv.URL+tc.path, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}
