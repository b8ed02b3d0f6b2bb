package origin

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The handler is plain net/http; it is tested without QUIC here and over
// HTTP/3 by the pcm package's tests.
func TestBytesAndRange(t *testing.T) {
	var log bytes.Buffer
	h := Handler(&log)
	for _, tc := range []struct {
		url, rng   string
		status     int
		start, len int64
	}{
		{"/bytes/1000", "", 200, 0, 1000},
		{"/bytes/1000", "bytes=990-", 206, 990, 10},
		{"/bytes/1000", "bytes=500-599", 206, 500, 100},
		{"/bytes/0", "", 200, 0, 0},
		{"/bytes/-1", "", 400, 0, -1},
		{"/bytes/abc", "", 400, 0, -1},
		{"/bytes/99999999999", "", 400, 0, -1},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.url, nil)
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.url, tc.rng, rec.Code, tc.status)
			continue
		}
		if tc.len < 0 {
			continue
		}
		body := rec.Body.Bytes()
		if int64(len(body)) != tc.len {
			t.Errorf("%s %s: %d bytes, want %d", tc.url, tc.rng, len(body), tc.len)
		}
		for i, b := range body {
			if b != PatternByte(tc.start+int64(i)) {
				t.Fatalf("%s %s: byte %d wrong", tc.url, tc.rng, i)
			}
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 7 {
		t.Errorf("access log has %d lines, want 7:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "GET /bytes/1000 206 10 ") {
		t.Errorf("access log lacks the range request's line:\n%s", log.String())
	}
}

func TestEcho(t *testing.T) {
	h := Handler(nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader("hello")))
	if rec.Code != 200 || rec.Body.String() != "hello" {
		t.Errorf("echo: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nothing", nil))
	if rec.Code != 404 {
		t.Errorf("unknown path: %d", rec.Code)
	}
}

func TestPatternSeek(t *testing.T) {
	p := &Pattern{Size: 10}
	p.Seek(-3, io.SeekEnd)
	b, _ := io.ReadAll(p)
	if !bytes.Equal(b, []byte{7, 8, 9}) {
		t.Errorf("tail = %v", b)
	}
	if _, err := p.Seek(-1, io.SeekStart); err == nil {
		t.Error("negative seek accepted")
	}
}

// TestServeTCP: /bytes over HTTP/1.1 and h2c, with Range, byte for byte.
func TestServeTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ServeTCP(l, nil)
	defer srv.Close()
	for _, h2 := range []bool{false, true} {
		var protos http.Protocols
		protos.SetHTTP1(!h2)
		protos.SetUnencryptedHTTP2(h2)
		hc := &http.Client{Transport: &http.Transport{Protocols: &protos}}
		req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/bytes/100000", nil)
		req.Header.Set("Range", "bytes=1000-")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusPartialContent || len(body) != 99000 {
			t.Fatalf("h2=%v: %d, %d bytes, %v", h2, resp.StatusCode, len(body), err)
		}
		if want := 2; h2 && resp.ProtoMajor != want {
			t.Fatalf("h2c: got HTTP/%d", resp.ProtoMajor)
		}
		for i, b := range body {
			if b != PatternByte(int64(i)+1000) {
				t.Fatalf("h2=%v: byte %d wrong", h2, i+1000)
			}
		}
	}
}
