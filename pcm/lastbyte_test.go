package pcm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// lastByteSize is the body of hangAfterBody: a few packets, so that the
// whole of it is delivered before the cut.
const lastByteSize = 20 << 10

// hangAfterBody serves /whole: all of its Content-Length, then holds the
// stream open (no FIN) until release is closed or the request ends, as a
// server whose path dies between the body's last byte and the stream's end
// looks from the client. Other paths get origin's handler.
func hangAfterBody(release <-chan struct{}) http.Handler {
	next := origin.Handler(nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/whole" || r.Header.Get("Range") != "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(lastByteSize))
		w.Header().Set("Accept-Ranges", "bytes")
		io.CopyN(w, &origin.Pattern{Size: lastByteSize}, lastByteSize)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
}

// A path that dies after the body's last byte but before its FIN: the
// download is whole, so it ends cleanly with every byte; asking for the
// rest on another path would ask for nothing (bytes=N-, which the server
// refuses with 416) and fail a complete download. Client.GetOn and
// Transport's body alike, in fake time.
func TestStallAfterTheLastByte(t *testing.T) {
	for _, api := range []string{"Client", "Transport"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				release := make(chan struct{})
				c := memDialHandler(t, n, 2, Config{}, hangAfterBody(release))
				t.Cleanup(func() { close(release) }) // before the server stops (cleanups run last first)
				ctx := context.Background()
				for _, p := range []int{1, 0} { // path 1 validated for the failover
					if _, err := c.GetOn(ctx, p, "/bytes/10", nil); err != nil {
						t.Fatal(err)
					}
				}
				cut := func() { n.SetDrop(memPath(0), true) }
				got, err := lastByteGet(ctx, api, c, cut)
				if err != nil {
					t.Fatalf("%d of %d bytes, then %v", len(got), lastByteSize, err)
				}
				checkPattern(t, got, lastByteSize)
			})
		})
	}
}

// lastByteGet fetches /whole through api on path 0 and calls cut once
// the body's last byte has arrived.
func lastByteGet(ctx context.Context, api string, c *Client, cut func()) ([]byte, error) {
	if api == "Client" {
		w := &cutWriter{after: lastByteSize, cut: cut}
		_, err := c.GetOn(ctx, 0, "/whole", w)
		return w.buf.Bytes(), err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.authority()+"/whole", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, resp.Body, lastByteSize); err != nil {
		return buf.Bytes(), err
	}
	cut()
	_, err = io.Copy(&buf, resp.Body)
	return buf.Bytes(), err
}
