package runner

import (
	"math"
	"testing"
	"time"
)

func TestPerGBAndRatio(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cpu    time.Duration
		bytes  int64
		wantGB float64
	}{
		{"1 s over 1 GB", time.Second, 1e9, 1},
		{"2.5 s over 20 MB", 2500 * time.Millisecond, 20e6, 125},
		{"100 ms over 200 MB", 100 * time.Millisecond, 200e6, 0.5},
		{"no bytes", time.Second, 0, 0},
		{"negative bytes", time.Second, -1, 0},
		{"no measurement", 0, 1e9, 0},
		{"clock went back", -time.Second, 1e9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := perGB(tc.cpu, tc.bytes); math.Abs(got-tc.wantGB) > 1e-9 {
				t.Fatalf("perGB(%v, %d) = %g, want %g", tc.cpu, tc.bytes, got, tc.wantGB)
			}
		})
	}
	for _, tc := range []struct{ a, b, want float64 }{
		{30, 10, 3}, {5, 20, 0.25}, {0, 10, 0}, {10, 0, 0}, {-1, 10, 0},
	} {
		if got := costRatio(tc.a, tc.b); got != tc.want {
			t.Errorf("costRatio(%g, %g) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}
