package server

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/healthz"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func states(s *Server) []State {
	var out []State
	for _, t := range s.Transitions() {
		out = append(out, t.State)
	}
	return out
}

func TestStatesFollowTheServersLife(t *testing.T) {
	s, _ := newTestServer(t, DefaultOptions())
	assert.Equal(t, StateNew, s.State())
	release := make(chan struct{})
	require.NoError(t, s.AddPostStartHook("gate", func(context.Context) error { <-release; return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	require.Eventually(t, func() bool { return s.State() == StateStarting }, 10*time.Second, time.Millisecond)
	ready, _ := s.Readiness()
	assert.False(t, ready, "a post-start hook is running")

	close(release)
	require.Eventually(t, func() bool { return s.State() == StateRunning }, 10*time.Second, time.Millisecond,
		"the hook's end makes the server check readiness again")
	assert.True(t, s.Signals().HasBeenReady.IsSignaled())
	ready, results := s.Readiness()
	assert.True(t, ready)
	require.NotEmpty(t, results)
	assert.Equal(t, "shutdown", results[len(results)-1].CheckName)

	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, []State{StateNew, StateStarting, StateRunning, StateStopping, StateTerminated}, states(s))
	ready, _ = s.Readiness()
	assert.False(t, ready, "readyz fails from the start of shutdown")
}

func TestFailedRunEndsFailedAndNeverRunning(t *testing.T) {
	s, _ := newTestServer(t, DefaultOptions())
	require.NoError(t, s.AddPostStartHook("boom", func(context.Context) error { return errors.New("bad") }))
	require.Error(t, s.Run(context.Background()))
	assert.Equal(t, StateFailed, s.State())
	assert.NotContains(t, states(s), StateRunning)
}

func TestStatesOnlyMoveForward(t *testing.T) {
	m := newStateMachine(time.Now(), nil)
	assert.True(t, m.enter(StateStarting))
	assert.True(t, m.enter(StateStopping))
	assert.False(t, m.enter(StateRunning), "a late readiness pass cannot undo shutdown")
	assert.True(t, m.enter(StateFailed))
	assert.False(t, m.enter(StateTerminated))
	assert.Equal(t, StateFailed, m.current())
	assert.Equal(t, "Failed", m.current().String())
}

// countingCheck counts how often it ran and fails while failing is set.
type countingCheck struct {
	runs    atomic.Int32
	failing atomic.Bool
}

func (c *countingCheck) Name() string { return "counting" }
func (c *countingCheck) Check(*http.Request) error {
	c.runs.Add(1)
	if c.failing.Load() {
		return errors.New("not yet")
	}
	return nil
}

func TestReadinessIsCheckedInOnePlace(t *testing.T) {
	s, _ := newTestServer(t, DefaultOptions())
	c := &countingCheck{}
	c.failing.Store(true)
	s.AddReadyzChecks(c)
	changes := atomic.Int32{}
	s.OnChange(func() { changes.Add(1) })

	// Reading the answer runs nothing.
	ready, results := s.Readiness()
	assert.False(t, ready)
	assert.Empty(t, results)
	assert.Zero(t, c.runs.Load())

	// A /readyz request runs the checks once and records the answer.
	code, _ := readyz(t, s, "/readyz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, int32(1), c.runs.Load())
	_, results = s.Readiness()
	require.Len(t, results, 3)
	assert.Equal(t, healthz.Result{CheckName: "counting", Err: errors.New("not yet")}, results[1])
	assert.False(t, s.Signals().HasBeenReady.IsSignaled())
	before := changes.Load()

	// The same answer again tells nobody; a new one does, and the first pass fires HasBeenReady.
	readyz(t, s, "/readyz")
	assert.Equal(t, before, changes.Load())
	c.failing.Store(false)
	code, _ = readyz(t, s, "/readyz/counting")
	assert.Equal(t, http.StatusOK, code)
	assert.Greater(t, changes.Load(), before)
	assert.True(t, s.Signals().HasBeenReady.IsSignaled())
	assert.Equal(t, StateRunning, s.State())
}
