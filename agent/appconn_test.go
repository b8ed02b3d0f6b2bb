package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/idlebody"
	"github.com/hetquic/hetquic/agent/server"
)

// slowUploadWait is how long the app-server of TestSlowUploadAnswerMem
// takes to answer an upload it read whole: twice the body's idle
// timeout, so that a deadline the body left on the app's connection
// would fire while the answer is awaited.
const slowUploadWait = 2 * idlebody.Timeout

// TestSlowUploadAnswerMem: an upload whose answer comes later than
// idlebody.Timeout after its body ended gets that answer. The app's body
// is done at its end: a read deadline it set on the app's connection
// after that would fire in net/http's background read of the connection,
// which takes it for the app hanging up and cancels every request on it.
func TestSlowUploadAnswerMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slowApp = "10.6.0.81:80"
		m := startMemAgent(t, 1, func(c *server.Config) { c.Allow = append(c.Allow, slowApp) }, nil)
		mux := http.NewServeMux()
		mux.HandleFunc("/slowup", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			select {
			case <-time.After(slowUploadWait):
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "got %q", b)
		})
		m.serveHTTP(&http.Server{Handler: mux}, m.pn.listen(slowApp))
		resp, err := m.hc.Post("http://"+slowApp+"/slowup", "text/plain", strings.NewReader("hello ct"))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != `got "hello ct"` {
			t.Fatalf("status %d, %q, %v", resp.StatusCode, body, err)
		}
	})
}

// TestCancelledRequestSaysSo: a request whose context ended (the app's
// connection, or a stripe's piece no longer needed) fails as that, naming
// the cause, not as ct-server unreachable: the cause of a 502 in a log is
// the first thing an operator reads.
func TestCancelledRequestSaysSo(t *testing.T) {
	stripeDone := errors.New("stripe done")
	for _, tc := range []struct {
		name     string
		cancel   func(context.CancelCauseFunc)
		err      error // the attempt's failure
		inDetail string
	}{
		{"app gone", func(c context.CancelCauseFunc) { c(nil) }, context.Canceled, "context canceled"},
		{"piece given up", func(c context.CancelCauseFunc) { c(stripeDone) }, errors.New("open stream: boom"), "(stripe done): open stream: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			tc.cancel(cancel)
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://app.example/x", nil)
			w := httptest.NewRecorder()
			err := (&fetch{w: w, r: r, ctx: ctx}).fail(tc.err)
			if !errors.Is(err, errGivenUp) || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.inDetail) {
				t.Fatalf("err %q: want errGivenUp wrapping %q, with %q", err, tc.err, tc.inDetail)
			}
			if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "request cancelled") {
				t.Fatalf("the app got %d %q", w.Code, w.Body.String())
			}
		})
	}
}
