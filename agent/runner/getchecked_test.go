package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/origin"
)

// TestGetChecked: the one GET both ct's modes and the MPTCP baseline
// measure and warm up with takes only origin's pattern, whole, under 200:
// a refusal, a short body or a wrong byte is an error, never a download.
func TestGetChecked(t *testing.T) {
	const size = 100_000
	mux := http.NewServeMux()
	mux.Handle("GET /bytes/", origin.Handler(nil))
	mux.HandleFunc("GET /busy", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "try later", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("GET /refused-pattern", func(w http.ResponseWriter, _ *http.Request) {
		body := make([]byte, size) // one that passes the pattern check
		for i := range body {
			body[i] = origin.PatternByte(int64(i))
		}
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(body)
	})
	mux.HandleFunc("GET /corrupt", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("not the pattern"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct {
		path string
		want string // "" for no error, else part of it
	}{
		{"/bytes/100000", ""},
		{"/bytes/99999", "99999 bytes, want 100000"},
		{"/busy", "503"},
		{"/refused-pattern", "429"},
		{"/corrupt", "after 0 bytes"},
	} {
		f, err := getChecked(context.Background(), srv.Client(), srv.URL+c.path, "app", size)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want == "" && f.Bytes != size:
			t.Errorf("%s: %d bytes, want %d", c.path, f.Bytes, size)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.path, err, c.want)
		}
	}
}
