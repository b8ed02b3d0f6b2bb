package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
)

// Malformed framing gets 400 wherever it is found, too large a head 431,
// and an idle keep-alive app connection is closed after AppIdleTimeout.
func TestFramingErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, nil, nil)
		var many strings.Builder
		for i := range 10000 {
			fmt.Fprintf(&many, "X-H%d: 1\r\n", i)
		}
		for _, c := range []struct {
			name, req string
			want      int
		}{
			// net/http's chunked reader refuses a bare LF: ct-client's
			// answer is the app's fault, not "ct-server unreachable".
			{"bare-LF chunked via ct-client", "POST http://" + memApp + "/up HTTP/1.1\r\nHost: " + memApp + "\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n", http.StatusBadRequest},
			{"10000 headers via ct-client", "GET http://" + memApp + "/bytes/1 HTTP/1.1\r\nHost: " + memApp + "\r\n" + many.String() + "\r\n", http.StatusRequestHeaderFieldsTooLarge},
		} {
			conn, br := m.rawProxy(t)
			go io.WriteString(conn, c.req)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			resp.Body.Close()
			conn.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
			}
		}
		// Straight to ct-server: a space before the colon makes a header
		// name no parser should guess at (smuggling).
		conn := memAuthConn(t, m)
		for _, c := range []struct {
			name, req string
			want      int
		}{
			{"Transfer-Encoding with a space before the colon", "POST http://" + memApp + "/up HTTP/1.1\r\nHost: " + memApp + "\r\nTransfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", http.StatusBadRequest},
			{"10000 headers", "GET http://" + memApp + "/bytes/1 HTTP/1.1\r\nHost: " + memApp + "\r\n" + many.String() + "\r\n", http.StatusRequestHeaderFieldsTooLarge},
		} {
			str, err := conn.OpenStreamSync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			go func() { io.WriteString(str, c.req); str.Close() }()
			resp, err := http.ReadResponse(bufio.NewReader(str), nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("ct-server, %s: status %d %q, want %d", c.name, resp.StatusCode, resp.Header.Get(wire.HdrError), c.want)
			}
		}
		// Idle keep-alive: open, one request, then silence.
		app, br := m.rawProxy(t)
		defer app.Close()
		io.WriteString(app, "GET http://"+memApp+"/bytes/10 HTTP/1.1\r\nHost: "+memApp+"\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("idle keep-alive connection: %v, want its end", err)
		}
		if d := time.Since(start); d < AppIdleTimeout || d > AppIdleTimeout+time.Second {
			t.Fatalf("idle keep-alive connection closed after %v, want %v", d, AppIdleTimeout)
		}
	})
}
