package stats

import "math"

// TQuantile is the p-quantile of Student's t distribution with df degrees
// of freedom (p ∈ (0, 1), df ≥ 1): the x with P(T ≤ x) = p. NaN outside
// that domain. It inverts TCDF by bisection to 1e-12, so it needs no table
// and is exact enough for any df (df → ∞ tends to the normal quantile,
// 1.959964 at p = 0.975).
func TQuantile(p float64, df int) float64 {
	if df < 1 || !(p > 0 && p < 1) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	// P(T ≤ x) is increasing in x; for p < 1 − 1e-15 and df ≥ 1 the
	// quantile is below 1e15 (Cauchy, the heaviest tail, at 1 − 1e-15 is
	// about 3e14).
	lo, hi := 0.0, 1.0
	for TCDF(hi, df) < p {
		lo, hi = hi, hi*2
		if hi > 1e16 {
			return math.Inf(1)
		}
	}
	for range 200 {
		mid := (lo + hi) / 2
		if TCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*max(1, hi) {
			break
		}
	}
	return (lo + hi) / 2
}

// TCDF is P(T ≤ x) for Student's t with df ≥ 1 degrees of freedom, from
// the regularized incomplete beta function:
// P(|T| > x) = I_{df/(df+x²)}(df/2, 1/2).
func TCDF(x float64, df int) float64 {
	if df < 1 || math.IsNaN(x) {
		return math.NaN()
	}
	v := float64(df)
	tail := 0.5 * regIncBeta(v/(v+x*x), v/2, 0.5)
	if x >= 0 {
		return 1 - tail
	}
	return tail
}

// regIncBeta is the regularized incomplete beta function I_x(a, b),
// evaluated by its continued fraction (modified Lentz), using the symmetry
// I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly.
func regIncBeta(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(x, a, b) / a
	}
	return 1 - front*betaFraction(1-x, b, a)/b
}

// betaFraction is the continued fraction of I_x(a, b) (without the front
// factor), by the modified Lentz method: f = 1/(1+ d₁/(1+ d₂/(1+ …))),
// with d₂ₘ = m(b−m)x / ((a+2m−1)(a+2m)) and
// d₂ₘ₊₁ = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)).
func betaFraction(x, a, b float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	nonzero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/nonzero(1-(a+b)*x/(a+1))
	f := d
	// step folds one more term num into the fraction and returns its factor.
	step := func(num float64) float64 {
		d = 1 / nonzero(1+num*d)
		c = nonzero(1 + num/c)
		f *= d * c
		return d * c
	}
	for m := 1.0; m <= 1000; m++ {
		step(m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m)))
		if delta := step(-(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))); math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}
