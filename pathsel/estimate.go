package pathsel

import "math"

// estimate is a path's expected sample and its variance.
type estimate struct {
	mean, variance float64
}

// estimator turns a path's window into an estimate.
type estimator struct {
	kind Estimator
	trim float64 // g: fraction of the largest samples the Gaussian drops
}

// of returns the (cached) estimate of path p; p must have a sample.
//
// With one sample the variance is taken as 0 (the population estimate): the
// paper's N−1 denominator is undefined there, and the confidence bonus, which
// is largest at N = 1, is what carries the uncertainty of a lone sample.
func (e estimator) of(p *pathStat) estimate {
	if p.estOK {
		return p.est
	}
	switch {
	case e.kind == Lognormal:
		p.est = lognormal(p.n, p.sumLn, p.sumLnSq)
	case e.trim > 0:
		p.est = trimmedGaussian(p.sorted, e.trim)
	default:
		p.est = gaussian(p.n, p.sum, p.sumSq)
	}
	p.estOK = true
	return p.est
}

// gaussian is the sample mean and variance, PCM journal Eq. 9–10 (Eq. 10 as
// printed lacks the square; the sample variance is meant).
func gaussian(n int, sum, sumSq float64) estimate {
	mean := sum / float64(n)
	return estimate{mean, sampleVar(n, sum, sumSq)}
}

// lognormal is the maximum-likelihood fit of ln X ~ N(μ, σ²) (Eq. 14–15, the
// Σ missing from Eq. 15 restored) and the lognormal moments (Eq. 16–17).
func lognormal(n int, sumLn, sumLnSq float64) estimate {
	mu := sumLn / float64(n)
	s2 := sampleVar(n, sumLn, sumLnSq)
	return estimate{
		mean:     math.Exp(mu + s2/2),
		variance: math.Exp(2*mu+s2) * math.Expm1(s2),
	}
}

// trimmedGaussian drops the largest ⌊g·n⌋ samples and fits the rest (PCM
// §4.1.1: the smallest 90 % are treated as Gaussian).
func trimmedGaussian(sorted []float64, g float64) estimate {
	keep := sorted[:len(sorted)-int(g*float64(len(sorted)))]
	var sum, sumSq float64
	for _, x := range keep {
		sum += x
		sumSq += x * x
	}
	return gaussian(len(keep), sum, sumSq)
}

// sampleVar is Σ(x−x̄)²/(n−1) from running sums, 0 for n < 2, never negative
// (rounding can make the difference of sums slightly so).
func sampleVar(n int, sum, sumSq float64) float64 {
	if n < 2 {
		return 0
	}
	fn := float64(n)
	return max(0, (sumSq-sum*sum/fn)/(fn-1))
}
