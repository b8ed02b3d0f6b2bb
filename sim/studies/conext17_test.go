package studies

import (
	"context"
	"strings"
	"testing"
)

// TestConext17 runs two scenarios per class with 1 and 3 workers: the
// same numbers either way, and every class measured.
func TestConext17(t *testing.T) {
	a, err := Conext17(context.Background(), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Conext17(context.Background(), 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var sa, sb strings.Builder
	WriteConext17Table(&sa, a, 2)
	WriteConext17Table(&sb, b, 2)
	if sa.String() != sb.String() {
		t.Fatalf("worker count changed the result:\n%s\n%s", sa.String(), sb.String())
	}
	t.Log("\n" + sa.String())
	for _, r := range a {
		if r.N == 0 || len(r.Ratio) != r.N || len(r.Benefit) != r.N {
			t.Errorf("%s: %d scenarios, %d ratios", r.Class.Name, r.N, len(r.Ratio))
		}
	}
	if _, err := Conext17(context.Background(), 0, 1); err == nil {
		t.Error("0 scenarios accepted")
	}
}
