package wire

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
)

func oneLineErr(t *testing.T, err error) {
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

// FuzzParseTarget: a stream's request head → what ct-server does with it.
// An accepted upstream is canonical (lower case, explicit port), so the
// allow-list compares like with like.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"GET http://App.Example:80/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /_ct/prefetch?url=http%3A%2F%2Fapp%2Fbig HTTP/1.1\r\nHost: ct\r\n\r\n",
		"GET /_ct/hello HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer x\r\n\r\n",
		"GET http://u:p@app/ HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := NewHeadReader(bytes.NewReader(data)).ReadRequest()
		if err != nil {
			return
		}
		tg, err := ParseTarget(req)
		oneLineErr(t, err)
		if err != nil {
			return
		}
		switch tg.Kind {
		case KindForward, KindConnect, KindPrefetch:
			again, err := NormHostPort(tg.Upstream, "")
			if err != nil || again != tg.Upstream {
				t.Fatalf("upstream %q not canonical: %q, %v", tg.Upstream, again, err)
			}
		case KindHello, KindPing:
		default:
			t.Fatalf("kind %v", tg.Kind)
		}
	})
}

// FuzzNormHostPort: the allow-list key; idempotent, a real port.
func FuzzNormHostPort(f *testing.F) {
	for _, s := range []string{"app:80", "APP.", "[::ffff:127.0.0.1]:8080", "127.1", "a%2f@b:1", "[::1", "h:0"} {
		f.Add(s, "80")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, hp, def string) {
		out, err := NormHostPort(hp, def)
		oneLineErr(t, err)
		if err != nil {
			return
		}
		again, err := NormHostPort(out, "")
		if err != nil || again != out {
			t.Fatalf("%q → %q → %q, %v", hp, out, again, err)
		}
		if strings.ToLower(out) != out {
			t.Fatalf("%q not lower case", out)
		}
	})
}

// FuzzUDPDatagram: the datagram prefix and the connect-udp path parsers
// never panic; a parsed datagram frames back to the same bytes when its
// varints were minimal, and a parsed path is a host:port.
func FuzzUDPDatagram(f *testing.F) {
	f.Add([]byte{0x02, 0x00, 'x'}, "/.well-known/masque/udp/192.0.2.6/443/")
	f.Add([]byte{0x40, 0x02, 0x00}, "/.well-known/masque/udp/2001%3Adb8%3A%3A1/53/")
	f.Add([]byte{0x80}, "/.well-known/masque/udp/a/0/")
	f.Fuzz(func(t *testing.T, b []byte, p string) {
		if id, payload, err := ParseDatagram(b); err == nil {
			if back := AppendDatagram(nil, id, payload); len(back) > len(b) {
				t.Fatalf("% x reframed longer: % x", b, back)
			}
		}
		if hp, err := ParseUDPPath(p); err == nil {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				t.Fatalf("%q → %q: %v", p, hp, err)
			}
		}
	})
}

// FuzzResumeHeaders: the tunnel resume request (Ct-Session,
// Ct-Resume-Down) and answer (Ct-Resume-Up).
func FuzzResumeHeaders(f *testing.F) {
	f.Add("0123456789abcdef0123456789abcdef", "1048576", "5", int64(0), int64(10))
	f.Add("new", "-1", "x", int64(5), int64(4))
	f.Add("0123456789ABCDEF0123456789ABCDEF", "+3", "10", int64(10), int64(10))
	f.Fuzz(func(t *testing.T, id, down, up string, low, high int64) {
		h := http.Header{}
		h.Set(HdrSession, id)
		h.Set(HdrResumeDown, down)
		gotID, from, err := ParseResume(h)
		oneLineErr(t, err)
		if err == nil && (from < 0 || len(gotID) != 32 || gotID != h.Get(HdrSession)) {
			t.Fatalf("accepted id %q from %d", gotID, from)
		}
		n, err := ParseResumeUp(up, low, high)
		oneLineErr(t, err)
		if err == nil && (n < low || n > high) {
			t.Fatalf("resume-up %d outside %d..%d", n, low, high)
		}
	})
}

// FuzzReadPush: a push stream from ct-server. An accepted push is a 200
// for an absolute http:// URL.
func FuzzReadPush(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nCt-Push-Url: http://app/x\r\nContent-Length: 3\r\n\r\nabc"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nCt-Push-Url: file:///etc/passwd\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 302 Found\r\nCt-Push-Url: http://app/x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, resp, err := ReadPush(bytes.NewReader(data))
		oneLineErr(t, err)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(HdrPushURL) != "" {
			t.Fatalf("accepted status %d, header left %q", resp.StatusCode, resp.Header.Get(HdrPushURL))
		}
		if _, err := UpstreamOf(u); err != nil {
			t.Fatalf("accepted URL %q: %v", u, err)
		}
	})
}

// FuzzParseSendStats: any Ct-Send-Stats value → an error of one line, or
// counts that write back to a value parsing to the same counts.
func FuzzParseSendStats(f *testing.F) {
	for _, s := range []string{"1000 12 31000 30000", "0 0 0 0", "5 6 1 1", "1 1 99999999999999 1", "x 1 2 3", " 1  2 3 4 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		st, err := ParseSendStats(v)
		oneLineErr(t, err)
		if err != nil {
			return
		}
		if st.Lost > st.Sent || st.SRTT > maxStatsRTT || st.MinRTT > maxStatsRTT {
			t.Fatalf("%q accepted as %+v", v, st)
		}
		again, err := ParseSendStats(st.String())
		if err != nil || again != st {
			t.Fatalf("%q → %+v → %q → %+v, %v", v, st, st.String(), again, err)
		}
	})
}
