package pcm

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestGetResumesAfterEachStall: Client.Get resumes a download at each
// stall on the budget a RoundTrip body has (resumeCount: one resume per
// path in a row without a byte, counted afresh after each byte), not on
// one attempt per path in all. A two-path client's active path dies three
// times in one 4 MiB download (at each quarter, the other path brought
// back each time); the body advances between the stalls, so each is a
// failover of its own, as for TestBodyResumesAfterSecondStall's bodies.
func TestGetResumesAfterEachStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var logs logCount
		c := memDial(t, n, 2, Config{Logf: logs.logf})
		for p := range c.numPaths() { // every path validated: the failovers migrate
			if _, err := c.GetOn(t.Context(), p, "/bytes/10", nil); err != nil {
				t.Fatal(err)
			}
		}
		const size, cuts = 4 << 20, 3
		var mu sync.Mutex
		var cut []int
		w := &countingWriter{}
		w.got = func(int) { // the active path dies at each quarter; the other comes back
			mu.Lock()
			defer mu.Unlock()
			if len(cut) < cuts && len(w.buf) >= size/4*(len(cut)+1) {
				for p := range c.numPaths() {
					n.SetDrop(memPath(p), false)
				}
				cut = append(cut, c.Active())
				n.SetDrop(memPath(c.Active()), true)
			}
		}
		res, err := c.Get(t.Context(), fmt.Sprintf("/bytes/%d", size), w)
		resumes := logs.count("resuming from byte")
		if err != nil || !checkPatternOK(w.buf, size) {
			t.Fatalf("after %d cuts (paths %v): %d bytes, %v, %d resumes logged:\n%s", len(cut), cut, len(w.buf), err, resumes, strings.Join(logs.lines, "\n"))
		}
		if len(cut) != cuts || res.Failovers < cuts {
			t.Fatalf("paths %v cut, %d failovers, %d resumes logged: the test needs %d stalls in the download", cut, res.Failovers, resumes, cuts)
		}
	})
}
