package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// opFunc is one operation of a phase; i is its index in [0, n).
type opFunc func(ctx context.Context, i int) error

// runner runs n operations on a fixed pool of workers and accounts for every one of
// them: each index is run exactly once, and the result's Errors is exactly the number
// of operations that returned an error.
type runner struct {
	concurrency int
	// opTimeout bounds each operation (0: no bound beyond the parent context).
	opTimeout time.Duration
}

func (r runner) run(ctx context.Context, name string, n int, op opFunc) Result {
	lat := make([]time.Duration, n)
	failed := make([]bool, n)
	var samples errorSamples
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range min(max(r.concurrency, 1), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				opCtx, cancel := ctx, context.CancelFunc(func() {})
				if r.opTimeout > 0 {
					opCtx, cancel = context.WithTimeout(ctx, r.opTimeout)
				}
				t := time.Now()
				err := op(opCtx, i)
				lat[i] = time.Since(t)
				cancel()
				if err != nil {
					failed[i] = true
					samples.add(err)
				}
			}
		})
	}
	wg.Wait()
	res := Result{Operation: name, Count: n, Elapsed: time.Since(start)}
	ok := make([]time.Duration, 0, n)
	for i := range n {
		if failed[i] {
			res.Errors++
		} else {
			ok = append(ok, lat[i])
		}
	}
	res.Latency = Summarize(ok)
	res.ErrorSamples = samples.list()
	return res
}

// maxErrorSamples is how many distinct error messages a result keeps.
const maxErrorSamples = 5

// errorSamples keeps the first few distinct error messages and how often each occurred,
// so that a failed run says why it failed. Safe for concurrent use.
type errorSamples struct {
	mu     sync.Mutex
	order  []string
	counts map[string]int
	other  int
}

func (s *errorSamples) add(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := err.Error()
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	if _, ok := s.counts[msg]; !ok && len(s.order) >= maxErrorSamples {
		s.other++
		return
	}
	if s.counts[msg] == 0 {
		s.order = append(s.order, msg)
	}
	s.counts[msg]++
}

func (s *errorSamples) list() []ErrorSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ErrorSample
	for _, msg := range s.order {
		out = append(out, ErrorSample{Message: msg, Count: s.counts[msg]})
	}
	if s.other > 0 {
		out = append(out, ErrorSample{Message: "(other errors)", Count: s.other})
	}
	return out
}
