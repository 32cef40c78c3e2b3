package main

import (
	"math"
	"slices"
	"time"
)

// latencies summarizes the acquire latencies of a case.
type latencies struct {
	p50, p99, max time.Duration
}

func summarize(d []time.Duration) latencies {
	if len(d) == 0 {
		return latencies{}
	}
	slices.Sort(d)
	return latencies{p50: quantile(d, 0.50), p99: quantile(d, 0.99), max: d[len(d)-1]}
}

// quantile is the nearest-rank quantile of sorted d.
func quantile(d []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(d)))) - 1
	return d[max(i, 0)]
}

// jain is Jain's fairness index of x: 1 when all are equal, 1/n when one
// takes everything.
func jain(x []float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// median of x (the mean of the middle two for an even count).
func median[T int64 | float64 | time.Duration](x []T) T {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
