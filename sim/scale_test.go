package sim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bulk runs one NewReno transfer of bytes over a 100 Mbit/s, 10 ms path
// with a 100-packet queue and calls sample every 100 ms of virtual time. It
// returns the completion time.
func bulk(t testing.TB, bytes int64, sample func()) time.Duration {
	s := New(1)
	c, err := NewConn(s, ConnConfig{CC: "newreno"}, dumbbell(s, 1, 100, 10*time.Millisecond, 0, 100))
	if err != nil {
		t.Fatal(err)
	}
	return complete(t, s, c, bytes, 0, 100*time.Millisecond, sample)
}

// liveHeap is the heap in use after a full collection: what the program
// retains, without garbage that happens not to be collected yet.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryFlatInTransferSize: the sender, the receiver and the event
// queue keep state for the chunks in play, not for the chunks transferred,
// so the live heap during a 16× larger transfer is no larger (20 B per
// chunk kept for the whole transfer would be 0.8 GB at 10 GB).
func TestMemoryFlatInTransferSize(t *testing.T) {
	peak := func(bytes int64) uint64 {
		var hi uint64
		bulk(t, bytes, func() { hi = max(hi, liveHeap()) })
		return hi
	}
	const small = 8 << 20
	base := liveHeap()
	a, b := peak(small), peak(16*small)
	// 16× the data would keep ≥ 120 k chunks more (≥ 2 MiB at 19 B each)
	// if per-chunk state were retained; the slack is a quarter of that.
	const slack = 512 << 10
	t.Logf("live heap above the test's own: %d KiB at %d MiB, %d KiB at %d MiB", (a-min(a, base))>>10, small>>20, (b-min(b, base))>>10, 16*small>>20)
	if b > a+slack {
		t.Fatalf("live heap grows with the transfer: %d KiB at %d MiB, %d KiB at %d MiB", a>>10, small>>20, b>>10, 16*small>>20)
	}
}

// TestTransfer10GB is the simulator's memory target, run on request
// (HETQUIC_SIM_10GB=1; it simulates 10 GB, ~20 M events): the process's
// peak resident set stays within 100 MB.
func TestTransfer10GB(t *testing.T) {
	if os.Getenv("HETQUIC_SIM_10GB") == "" {
		t.Skip("set HETQUIC_SIM_10GB=1 to simulate a 10 GB transfer and check peak RSS ≤ 100 MB")
	}
	start := time.Now()
	fct := bulk(t, 10e9, func() {})
	hwm := peakRSS(t)
	t.Logf("10 GB in %v simulated, %v wall; peak RSS %d MB", fct, time.Since(start).Round(time.Millisecond), hwm>>20)
	if hwm > 100<<20 {
		t.Fatalf("peak RSS %d MB, want ≤ 100 MB", hwm>>20)
	}
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS(t testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("VmHWM not in /proc/self/status")
	return 0
}
