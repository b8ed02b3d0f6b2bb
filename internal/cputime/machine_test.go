package cputime

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tick := time.Second / userHZ
	for _, tc := range []struct {
		name, text string
		want       time.Duration
		err        string
	}{
		{"busy fields only", "cpu  100 20 30 5000 40 1 2 3 7 8\ncpu0 1 2 3 4 5 6 7 8 9 10\n", (100 + 20 + 30 + 1 + 2 + 3) * tick, ""},
		{"eight counters", "cpu 1 1 1 1 1 1 1 1", 6 * tick, ""},
		{"idle machine", "cpu 0 0 0 900 9 0 0 0 0 0", 0, ""},
		{"per-core line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, "not the aggregate"},
		{"empty", "", 0, "not the aggregate"},
		{"too few", "cpu 1 2 3 4 5 6 7", 0, "7 counters"},
		{"not a number", "cpu 1 x 3 4 5 6 7 8", 0, `counter 2: "x"`},
		{"negative", "cpu 1 2 -3 4 5 6 7 8", 0, "counter 3"},
		{"overflow", "cpu 18446744073709551615 1 1 1 1 1 1 1", 0, "overflows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tc.text))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

// TestMachineCountsWork: where /proc/stat exists, spinning adds busy
// time to the machine's total (other tenants can only add more).
func TestMachineCountsWork(t *testing.T) {
	start, err := Machine()
	if err != nil {
		t.Skipf("no machine CPU time here: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		now, err := Machine()
		if err != nil {
			t.Fatal(err)
		}
		if now-start >= 50*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s of spinning added only %v of machine CPU time", now-start)
		}
	}
}

// FuzzParseProcStat: any text gives a non-negative time or a one-line error.
func FuzzParseProcStat(f *testing.F) {
	f.Add("cpu  12146 1457 4613 20075 488 0 206 1310 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	f.Add("cpu 1 2 3")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseProcStat([]byte(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("negative busy time %v", d)
		}
	})
}
