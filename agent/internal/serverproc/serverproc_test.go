package serverproc

import (
	"os"
	"testing"
	"time"
)

// TestParseStatCPU: utime + stime counted from the command name's last
// ')', which may hold spaces and parentheses; a short or bad line is 0.
func TestParseStatCPU(t *testing.T) {
	for _, c := range []struct {
		line string
		want time.Duration
	}{
		{"1234 (hetquic) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0", 3 * time.Second},
		{"1234 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 1 2 0 0", 30 * time.Millisecond},
		{"1234 (hetquic) S 1 2 3", 0},
		{"1234 (hetquic) S 1 2 3 4 5 6 7 8 9 10 x 2 0 0", 0},
		{"no paren", 0},
	} {
		if got := ParseStatCPU(c.line); got != c.want {
			t.Errorf("%q: %v, want %v", c.line, got, c.want)
		}
	}
}

// TestStatus reads this process's own /proc status.
func TestStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc (not Linux)")
	}
	if rss := Status(os.Getpid(), "VmRSS"); rss < 1<<20 {
		t.Fatalf("VmRSS %d bytes", rss)
	}
	if v := Status(os.Getpid(), "NoSuchField"); v != 0 {
		t.Fatalf("unknown field: %d", v)
	}
	if v := Status(1<<30, "VmRSS"); v != 0 {
		t.Fatalf("no such process: %d", v)
	}
}
