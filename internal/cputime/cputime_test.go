package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsWork: spinning adds CPU time (however long the shared
// machine makes it take), and sleeping adds almost none.
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	if start <= 0 {
		t.Skip("no CPU time on this platform")
	}
	deadline := time.Now().Add(20 * time.Second)
	for Process()-start < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("20 s of spinning added only %v of CPU time", Process()-start)
		}
	}
	before := Process()
	time.Sleep(50 * time.Millisecond)
	if slept := Process() - before; slept > 25*time.Millisecond {
		t.Fatalf("50 ms of sleep added %v of CPU time", slept)
	}
}
