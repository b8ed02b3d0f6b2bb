package agent

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// slowAppWait is how long the slow app-server of TestSlowAppIsNoStallMem
// takes before it answers: twice the default stall timeout, so that a
// ct-client mistaking a slow app for a silent path would act on it.
const slowAppWait = 2 * DefaultStallTimeout

// TestSlowAppIsNoStallMem: on the fake network and fake time, an
// app-server that waits longer than the stall timeout before it answers is
// not a stalled path (the path itself stays alive): the response arrives
// whole, with no stall decided and no migration. On real sockets a loaded
// machine could pause the path itself for as long, so this check lives
// here.
func TestSlowAppIsNoStallMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slowApp = "10.6.0.81:80"
		m := startMemAgent(t, 2, func(c *server.Config) { c.Allow = append(c.Allow, slowApp) }, nil)
		mux := http.NewServeMux()
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(slowAppWait)
			io.WriteString(w, "slow but alive")
		})
		m.serveHTTP(&http.Server{Handler: mux}, m.pn.listen(slowApp))
		start := time.Now()
		resp, err := m.hc.Get("http://" + slowApp + "/slow")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != "slow but alive" {
			t.Fatalf("status %d, %q, %v", resp.StatusCode, body, err)
		}
		if took := time.Since(start); took < slowAppWait {
			t.Fatalf("answered after %v, before the app's %v: the check checks nothing", took, slowAppWait)
		}
		if s, mg := m.c.stallDetections.Load(), m.c.migrations.Load(); s != 0 || mg != 0 {
			t.Fatalf("a slow app-server counted as a stalled path: %d stalls, %d migrations", s, mg)
		}
	})
}
