package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// msSeq returns 1ms, 2ms, ..., n ms.
func msSeq(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one p50", msSeq(1), 50, 1 * ms},
		{"one p99", msSeq(1), 99, 1 * ms},
		{"two p50 is the lower", msSeq(2), 50, 1 * ms},
		{"two p99 is the upper", msSeq(2), 99, 2 * ms},
		{"ten p0 clamps to min", msSeq(10), 0, 1 * ms},
		{"ten p10", msSeq(10), 10, 1 * ms},
		{"ten p50", msSeq(10), 50, 5 * ms},
		{"ten p90", msSeq(10), 90, 9 * ms},
		{"ten p99", msSeq(10), 99, 10 * ms},
		{"ten p100", msSeq(10), 100, 10 * ms},
		{"hundred p50", msSeq(100), 50, 50 * ms},
		{"hundred p99", msSeq(100), 99, 99 * ms},
		{"thousand p99", msSeq(1000), 99, 990 * ms},
		{"above 100 clamps to max", msSeq(10), 150, 10 * ms},
		{"outlier only in p99", []time.Duration{ms, ms, ms, time.Second}, 99, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Percentile(tt.sorted, tt.p))
		})
	}
}

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		sorted []time.Duration
		want   time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3 * ms}, 3 * ms},
		{[]time.Duration{1 * ms, 3 * ms}, 2 * ms},
		{[]time.Duration{1 * ms, 2 * ms, 30 * ms}, 2 * ms},
		{[]time.Duration{1 * ms, 2 * ms, 3 * ms, 10 * ms}, 2500 * time.Microsecond},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Median(tt.sorted), "Median(%v)", tt.sorted)
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	in := []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}
	s := Summarize(in)
	assert.Equal(t, Summary{N: 4, Min: ms, Max: 4 * ms, Mean: 2500 * time.Microsecond,
		Median: 2500 * time.Microsecond, P50: 2 * ms, P99: 4 * ms}, s)
	assert.Equal(t, []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}, in, "input must not be reordered")
	assert.Equal(t, Summary{}, Summarize(nil))
}
