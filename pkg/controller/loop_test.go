package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Loop runs a pass at once, one more for a burst of triggers, retries a failed pass within a
// second, and ends with its context.
func TestLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	trigger := make(chan int, 10)
	var passes atomic.Int32
	release := make(chan struct{})
	fail := atomic.Bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop(ctx, 0, func(context.Context) error {
			n := passes.Add(1)
			if n == 1 {
				<-release // triggers arrive while the first pass runs
			}
			if fail.Load() {
				fail.Store(false)
				return errors.New("not yet")
			}
			return nil
		}, trigger)
	}()
	require.Eventually(t, func() bool { return passes.Load() == 1 }, 5*time.Second, time.Millisecond, "a pass at once")
	for i := range 5 {
		trigger <- i
	}
	require.Eventually(t, func() bool { return len(trigger) == 0 }, 5*time.Second, time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return passes.Load() == 2 }, 5*time.Second, time.Millisecond, "one more pass for the burst")

	fail.Store(true)
	trigger <- 0
	require.Eventually(t, func() bool { return passes.Load() == 4 }, 5*time.Second, time.Millisecond, "a failed pass runs again within a second")

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
	assert.EqualValues(t, 4, passes.Load(), "one pass for the burst, not one each; one retry")
}

func TestFilter(t *testing.T) {
	in := make(chan int, 4)
	out := Filter(t.Context(), in, func(v int) bool { return v%2 == 0 })
	in <- 1
	in <- 2
	in <- 3
	in <- 4
	close(in)
	var got []int
	for v := range out {
		got = append(got, v)
	}
	assert.Equal(t, []int{2, 4}, got)
}

// Settle sends one value for a burst, after the burst has had time to land.
func TestSettle(t *testing.T) {
	in := make(chan int, 10)
	out := Settle(t.Context(), in, 50*time.Millisecond)
	for i := range 5 {
		in <- i
	}
	assert.Equal(t, 0, <-out, "the first of the burst")
	in <- 9
	assert.Equal(t, 9, <-out)
	close(in)
	_, open := <-out
	assert.False(t, open, "closes after its input")
}
