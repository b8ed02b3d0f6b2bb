package agent

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// pieceAppAddr is TestStripePieceOfAnotherLength's app-server, beside memApp.
const pieceAppAddr = "10.6.0.81:80"

// TestStripePieceOfAnotherLength: an object with no validator (no ETag,
// no Last-Modified: a stripe's pieces carry no If-Range) whose Range
// answers come from a longer object, as when it changed between the
// original and its pieces. The app never gets a body that is not the
// original's: the whole original, or an error. Before fetchPiece checked
// Content-Range, a piece of the longer object was taken by its length
// alone and the app got a mixed body with no error.
func TestStripePieceOfAnotherLength(t *testing.T) {
	orig := make([]byte, 8<<20)
	for i := range orig {
		orig[i] = byte(i * 7)
	}
	longer := make([]byte, len(orig)+1)
	for i := range longer {
		longer[i] = byte(i*7) ^ 0x5a
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obj := orig
		if r.Header.Get("Range") != "" {
			obj = longer
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj)) // no modification time: no Last-Modified
	})
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, func(c *server.Config) { c.Allow = append(c.Allow, pieceAppAddr) }, nil)
		m.serveHTTP(&http.Server{Handler: app}, m.pn.listen(pieceAppAddr))
		resp, err := m.hc.Get("http://" + pieceAppAddr + "/obj")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if m.c.stripes.Load() == 0 {
			t.Fatal("the response was not striped: nothing tested")
		}
		if err == nil && !bytes.Equal(body, orig) {
			t.Fatalf("the app got %d bytes with no error that are not the original's object (%d bytes)", len(body), len(orig))
		}
	})
}
