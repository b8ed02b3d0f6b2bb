package pcm

import "testing"

// TestLedgerCarrierSince: the carrier read off the ledger without a second
// snapshot is the one two snapshots give, paths added since included, and
// a request's snapshot into its own buffer allocates nothing.
func TestLedgerCarrierSince(t *testing.T) {
	l := newRxLedger(2)
	var buf [inlinePaths]int64
	before := l.snapshotTo(buf[:0])
	if got := l.carrierSince(before); got != -1 {
		t.Errorf("nothing received: carrier %d, want -1", got)
	}
	l.add(1, 100)
	l.add(0, 10)
	if got, want := l.carrierSince(before), carrier(before, l.snapshot()); got != 1 || want != 1 {
		t.Errorf("carrier %d (from two snapshots %d), want 1", got, want)
	}
	l.add(3, 500) // a path added after the snapshot
	if got := l.carrierSince(before); got != 3 {
		t.Errorf("carrier %d, want 3", got)
	}
	if raceEnabled {
		return // the race detector's instrumentation allocates
	}
	if n := testing.AllocsPerRun(100, func() { l.snapshotTo(buf[:0]) }); n != 0 {
		t.Errorf("snapshotTo into a buffer that fits: %v allocations, want 0", n)
	}
}
