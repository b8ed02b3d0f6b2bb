package stats

import (
	"math"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMeanVarHandComputed(t *testing.T) {
	xs := []float64{2, 4, 4, 4, 5, 5, 7, 9}
	// Σ = 40, mean 5; Σ(x−5)² = 9+1+1+1+0+0+4+16 = 32; 32/7.
	m, v := MeanVar(xs)
	if m != 5 || !near(v, 32.0/7, 1e-12) {
		t.Fatalf("MeanVar = %v, %v; want 5, %v", m, v, 32.0/7)
	}
	if _, s := MeanStd(xs); !near(s, math.Sqrt(32.0/7), 1e-12) {
		t.Fatalf("std = %v", s)
	}
	if m, v := MeanVar([]float64{3}); m != 3 || v != 0 {
		t.Fatalf("one value: %v, %v; want 3, 0", m, v)
	}
}

func TestEmptyIsNaN(t *testing.T) {
	for name, v := range map[string]float64{
		"Mean":     Mean(nil),
		"Quantile": Quantile(nil, 0.5),
		"Median":   Median([]float64{}),
		"CI95 0":   CI95(nil),
		"CI95 1":   CI95([]float64{1}),
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s of too little input = %v, want NaN", name, v)
		}
	}
	if m, v := MeanVar(nil); !math.IsNaN(m) || !math.IsNaN(v) {
		t.Errorf("MeanVar(nil) = %v, %v", m, v)
	}
}

func TestQuantileType7(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10} // sorted
	for _, c := range []struct{ q, want float64 }{
		{0, 1}, {1, 10}, {0.5, 3},
		{0.25, 2},    // h = 1
		{0.9, 7.6},   // h = 3.6: 4 + 0.6·6
		{0.95, 8.8},  // h = 3.8: 4 + 0.8·6
		{0.125, 1.5}, // h = 0.5
	} {
		if got := Quantile(xs, c.q); !near(got, c.want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	for _, q := range []float64{-0.1, 1.1, math.NaN()} {
		if !math.IsNaN(Quantile(xs, q)) {
			t.Errorf("Quantile(%v) is not NaN", q)
		}
	}
	// Even n: the median is the mean of the middle two, as NumPy's default.
	unsorted := []float64{4, 1, 3, 2}
	if got := Median(unsorted); got != 2.5 {
		t.Errorf("Median = %v, want 2.5", got)
	}
	if unsorted[0] != 4 {
		t.Errorf("Median sorted its input in place")
	}
	if got := Quantiles([]float64{5}, 0, 0.5, 1); got[0] != 5 || got[1] != 5 || got[2] != 5 {
		t.Errorf("one value: %v", got)
	}
}

func TestTQuantileTable(t *testing.T) {
	// Two-sided 95 % critical values of Student's t (any statistics table).
	for _, c := range []struct {
		df   int
		want float64
	}{
		{1, 12.706205}, {2, 4.302653}, {4, 2.776445}, {9, 2.262157},
		{19, 2.093024}, {29, 2.045230}, {100, 1.983972}, {1_000_000, 1.959966},
	} {
		if got := TQuantile(0.975, c.df); !near(got, c.want, 2e-6) {
			t.Errorf("t(0.975, %d) = %.7f, want %.6f", c.df, got, c.want)
		}
	}
	if got := TQuantile(0.025, 19); !near(got, -2.093024, 2e-6) {
		t.Errorf("lower tail: %v", got)
	}
	if TQuantile(0.5, 3) != 0 || !math.IsNaN(TQuantile(1, 3)) || !math.IsNaN(TQuantile(0.9, 0)) {
		t.Errorf("domain edges wrong")
	}
	// CDF symmetry and a hand value: df = 1 is Cauchy, P(T ≤ 1) = 3/4.
	if got := TCDF(1, 1); !near(got, 0.75, 1e-12) {
		t.Errorf("TCDF(1, 1) = %v, want 0.75", got)
	}
	if got := TCDF(-2, 5) + TCDF(2, 5); !near(got, 1, 1e-12) {
		t.Errorf("TCDF not symmetric: %v", got)
	}
}

func TestCI95Student(t *testing.T) {
	// 20 values 1..20: s² = 35, s/√20 = 1.3229; t(0.975, 19) = 2.093024.
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	want := 2.093024 * math.Sqrt(35.0/20)
	if got := CI95(xs); !near(got, want, 1e-5) {
		t.Fatalf("CI95 = %v, want %v (Student t, not 1.96)", got, want)
	}
}

func TestMs(t *testing.T) {
	if Ms(1500*time.Microsecond) != 1.5 || DurationMs(2.5) != 2500*time.Microsecond {
		t.Fatalf("Ms / DurationMs wrong")
	}
	if got := FloatsMs([]time.Duration{time.Second, time.Millisecond}); got[0] != 1000 || got[1] != 1 {
		t.Fatalf("FloatsMs = %v", got)
	}
}
