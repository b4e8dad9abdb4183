package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every index runs exactly once and every failure is counted, however the workers
// interleave.
func TestRunnerCountsErrorsExactly(t *testing.T) {
	const n = 1000
	calls := make([]atomic.Int32, n)
	r := runner{concurrency: 16}
	res := r.run(context.Background(), "op", n, func(_ context.Context, i int) error {
		calls[i].Add(1)
		runtime.Gosched()
		if i%7 == 0 {
			return fmt.Errorf("op %d failed", i%3) // three distinct messages
		}
		return nil
	})
	for i := range calls {
		require.EqualValues(t, 1, calls[i].Load(), "index %d", i)
	}
	wantErrors := (n + 6) / 7
	assert.Equal(t, n, res.Count)
	assert.Equal(t, wantErrors, res.Errors)
	assert.Equal(t, n-wantErrors, res.Latency.N, "latency covers successful operations only")
	total := 0
	for _, s := range res.ErrorSamples {
		total += s.Count
	}
	assert.Len(t, res.ErrorSamples, 3)
	assert.Equal(t, wantErrors, total, "the samples count every error")
}

// A fake operation that fails its first k calls: the result says exactly k failed.
func TestRunnerFailsKTimes(t *testing.T) {
	for _, k := range []int64{0, 1, 13, 500} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			var calls atomic.Int64
			res := runner{concurrency: 32}.run(context.Background(), "op", 500, func(context.Context, int) error {
				if calls.Add(1) <= k {
					return errors.New("injected")
				}
				return nil
			})
			assert.Equal(t, int(k), res.Errors)
			rep := &Report{Results: []Result{res}}
			assert.Equal(t, k == 0, rep.OK())
			assert.Equal(t, map[bool]int{true: exitOK, false: exitFailed}[k == 0], rep.ExitCode())
		})
	}
}

// The runner keeps exactly `concurrency` operations in flight: the first ones wait for
// each other (this deadlocks, and fails, if fewer run at once) and no more ever overlap.
func TestRunnerConcurrency(t *testing.T) {
	const c = 8
	var inFlight, peak atomic.Int32
	all := make(chan struct{})
	var started atomic.Int32
	res := runner{concurrency: c}.run(context.Background(), "op", 100, func(ctx context.Context, i int) error {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		if started.Add(1) == c {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("not all workers ran concurrently")
		}
	})
	assert.Zero(t, res.Errors, "%v", res.ErrorSamples)
	assert.EqualValues(t, c, peak.Load())
}

func TestRunnerTimeoutAndCancel(t *testing.T) {
	block := func(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() }
	res := runner{concurrency: 4, opTimeout: time.Millisecond}.run(context.Background(), "op", 10, block)
	assert.Equal(t, 10, res.Errors)
	require.NotEmpty(t, res.ErrorSamples)
	assert.Contains(t, res.ErrorSamples[0].Message, "deadline exceeded")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = runner{concurrency: 4}.run(ctx, "op", 10, block)
	assert.Equal(t, 10, res.Errors)

	res = runner{concurrency: 4}.run(ctx, "op", 0, block)
	assert.Equal(t, Result{Operation: "op", Elapsed: res.Elapsed}, res)
}

func TestErrorSamplesAreBounded(t *testing.T) {
	var s errorSamples
	for i := range 20 {
		s.add(fmt.Errorf("error %d", i%10))
	}
	got := s.list()
	require.Len(t, got, maxErrorSamples+1)
	for _, e := range got[:maxErrorSamples] {
		assert.Equal(t, 2, e.Count)
	}
	assert.Equal(t, ErrorSample{Message: "(other errors)", Count: 10}, got[maxErrorSamples])
}
