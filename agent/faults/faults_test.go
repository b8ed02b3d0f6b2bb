package faults

import (
	"context"
	"testing"
	"time"
)

// Every fault against every kind of app connection: intact or reset,
// never a short body (a clean end before the data's end).
func TestFaultMatrix(t *testing.T) {
	if raceEnabled {
		t.Skip("fifteen agents at once under -race miss their deadlines; .ci/run runs this without -race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cells, err := Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", Markdown(cells))
	for _, c := range cells {
		if !c.OK() || c.Outcome == "error" {
			t.Errorf("%s × %s: %s after %d bytes %s", c.Fault, c.Kind, c.Outcome, c.Bytes, c.Detail)
		}
	}
}
