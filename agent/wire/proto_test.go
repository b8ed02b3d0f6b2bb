package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		raw      string
		kind     Kind
		upstream string
		bad      bool
	}{
		{raw: "GET http://App.Example:8080/x HTTP/1.1\r\nHost: a\r\n\r\n", kind: KindForward, upstream: "app.example:8080"},
		{raw: "GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", kind: KindForward, upstream: "a:80"},
		{raw: "GET http://[::1]/x HTTP/1.1\r\nHost: a\r\n\r\n", kind: KindForward, upstream: "[::1]:80"},
		{raw: "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", kind: KindConnect, upstream: "a:443"},
		{raw: "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\n\r\n", kind: KindHello},
		{raw: "GET /_ct/ping HTTP/1.1\r\nHost: ct\r\n\r\n", kind: KindPing},
		{raw: "GET /_ct/prefetch?url=http%3A%2F%2Fa%3A81%2Fx HTTP/1.1\r\nHost: ct\r\n\r\n", kind: KindPrefetch, upstream: "a:81"},
		{raw: "POST /_ct/ping HTTP/1.1\r\nHost: ct\r\n\r\n", bad: true},
		{raw: "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "GET https://a/x HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "GET http://a:0/x HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "GET http://a:x/x HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "CONNECT a HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "CONNECT :80 HTTP/1.1\r\nHost: a\r\n\r\n", bad: true},
		{raw: "GET /_ct/prefetch?url=%2Frel HTTP/1.1\r\nHost: ct\r\n\r\n", bad: true},
	}
	for _, c := range cases {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(c.raw)))
		if err != nil {
			if c.bad {
				continue
			}
			t.Fatalf("%q: %v", c.raw, err)
		}
		got, err := ParseTarget(req)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", c.raw, got)
			}
			continue
		}
		if err != nil || got.Kind != c.kind || got.Upstream != c.upstream {
			t.Errorf("%q: got %+v, %v; want kind %d upstream %q", c.raw, got, err, c.kind, c.upstream)
		}
	}
}

func TestHeadLimit(t *testing.T) {
	big := "GET http://a/ HTTP/1.1\r\nX: " + strings.Repeat("y", MaxHeaderBytes) + "\r\n\r\n"
	if _, err := NewHeadReader(strings.NewReader(big)).ReadRequest(); !errors.Is(err, ErrHeaderTooLarge) {
		t.Fatalf("big head: %v", err)
	}
	// The bound is on the head only: a large body reads on.
	body := strings.Repeat("z", 3*MaxHeaderBytes)
	raw := "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	req, err := NewHeadReader(strings.NewReader(raw)).ReadRequest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(req.Body)
	if err != nil || len(b) != len(body) {
		t.Fatalf("body: %d bytes, %v", len(b), err)
	}
}

// FuzzReadHead feeds arbitrary bytes to what ct-server does with a stream's
// first bytes (bounded head read, then ParseTarget) and to the response
// head reader: nothing may panic, and what is accepted must be well-formed.
// (The Range and Content-Range parsers are fuzzed in internal/resume.)
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"GET http://a:80/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /_ct/hello HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer x\r\n\r\n",
		"GET /_ct/prefetch?url=http%3A%2F%2Fa%2F HTTP/1.1\r\nHost: ct\r\n\r\n",
		"GET http://[::1]:0/ HTTP/1.1\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"\x00\x00\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if req, err := NewHeadReader(bytes.NewReader(data)).ReadRequest(); err == nil {
			if tg, err := ParseTarget(req); err == nil {
				switch tg.Kind {
				case KindForward, KindConnect, KindPrefetch:
					if _, err := NormHostPort(tg.Upstream, ""); err != nil {
						t.Fatalf("accepted upstream %q is not host:port: %v", tg.Upstream, err)
					}
				case KindHello, KindPing:
				default:
					t.Fatalf("kind %d", tg.Kind)
				}
			}
			io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		}
		if resp, err := NewHeadReader(bytes.NewReader(data)).ReadResponse(nil); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		}
	})
}
