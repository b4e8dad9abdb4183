package main

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of latency samples. The zero value describes no samples.
type Summary struct {
	N      int
	Min    time.Duration
	Max    time.Duration
	Mean   time.Duration
	Median time.Duration
	P50    time.Duration
	P99    time.Duration
}

// Summarize computes a Summary of samples; samples is not modified.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	return Summary{
		N:      len(sorted),
		Min:    sorted[0],
		Max:    sorted[len(sorted)-1],
		Mean:   total / time.Duration(len(sorted)),
		Median: Median(sorted),
		P50:    Percentile(sorted, 50),
		P99:    Percentile(sorted, 99),
	}
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted samples by the
// nearest-rank method: the smallest sample such that at least p% of the samples are
// less than or equal to it. It is always one of the samples (never interpolated);
// p <= 0 gives the minimum and no samples give 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median returns the median of sorted samples: the middle one, or the mean of the two
// middle ones for an even count; 0 for no samples.
func Median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	default:
		return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
	}
}

// ms converts a duration to fractional milliseconds, for reports.
func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
