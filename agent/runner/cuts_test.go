package runner

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCuts runs the matrix's outage rows with a 3 s cut on real sockets
// through the relay: every transfer completes intact across the all-path
// cut, and the striped download returns to the best path at all after
// its cut (how soon is the matrix's measured row, not a test). About 25 s;
// skipped with -short.
func TestCuts(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts: about 25 s")
	}
	// About 25 s alone, 44 s under -race; one run of the agent packages
	// under -race at load 19 took over two minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := RunCuts(ctx, CutConfig{Cut: 3 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if strings.Contains(r.Intact, "FAILED") {
			t.Errorf("%s: %s", r.Case, r.Intact)
		}
	}
	if rows[0].BackS < 0 {
		t.Errorf("the download never returned to the best path after its cut: %+v", rows[0])
	}
	if rows[1].Intact != "download, tunnel, upload" {
		t.Errorf("all-path cut: %q", rows[1].Intact)
	}
}
