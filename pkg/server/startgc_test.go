package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGC stands in for debug.SetGCPercent, so the tests neither depend on nor change the
// test binary's collector.
func fakeGC(percent int) (*gcHold, func() int) {
	cur := percent
	g := &gcHold{set: func(p int) int { prev := cur; cur = p; return prev }} // called under g.mu
	return g, func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return cur
	}
}

// useFakeGC makes the package's holds use a fake collector at percent, with GOGC set to gogc
// in the environment, for the test.
func useFakeGC(t *testing.T, percent int, gogc string) func() int {
	g, get := fakeGC(percent)
	saved := startupGC
	startupGC = g
	t.Cleanup(func() { startupGC = saved })
	t.Setenv("GOGC", gogc)
	return get
}

func TestStartupGCHoldsNest(t *testing.T) {
	g, percent := fakeGC(75)
	a := g.hold()
	assert.Equal(t, startupGCPercent, percent())
	b := g.hold()
	a()
	a() // a second release is a no-op, not b's
	assert.Equal(t, startupGCPercent, percent(), "b still holds")
	b()
	assert.Equal(t, 75, percent(), "the percent from before the first hold")
	c := g.hold()
	assert.Equal(t, startupGCPercent, percent())
	c()
	assert.Equal(t, 75, percent())
}

// The hold package initialisation took (as init sets it up) lasts until the process's own
// hold is taken and the initialisation's released; the percent then returns to the one from
// before initialisation.
func TestStartupGCInitHold(t *testing.T) {
	g, percent := fakeGC(startupGCPercent) // startgc's init relaxed it from 75
	g.n, g.prev = 1, 75
	releaseInit := g.releaser()
	process := g.hold()
	releaseInit()
	assert.Equal(t, startupGCPercent, percent(), "the process holds it")
	process()
	assert.Equal(t, 75, percent())
}

func TestStartupGCLeavesGOGCAlone(t *testing.T) {
	percent := useFakeGC(t, 50, "50")
	HoldStartupGC()()
	release := HoldStartupGC()
	assert.Equal(t, 50, percent(), "an operator's GOGC wins")
	release()
}

func TestServerHoldsStartupGCUntilReady(t *testing.T) {
	percent := useFakeGC(t, 100, "")

	s, _ := newTestServer(t, DefaultOptions())
	assert.Equal(t, startupGCPercent, percent(), "from New")
	release := make(chan struct{})
	require.NoError(t, s.AddPostStartHook("gate", func(context.Context) error { <-release; return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.State() == StateStarting }, 10*time.Second, time.Millisecond)
	assert.Equal(t, startupGCPercent, percent(), "while a hook runs")
	close(release)
	require.Eventually(t, func() bool { return s.State() == StateRunning }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 100, percent(), "once ready")
	cancel()
	require.NoError(t, <-done)

	failing, _ := newTestServer(t, DefaultOptions())
	assert.Equal(t, startupGCPercent, percent())
	require.NoError(t, failing.AddPostStartHook("boom", func(context.Context) error { return context.Canceled }))
	require.Error(t, failing.Run(context.Background()))
	assert.Equal(t, 100, percent(), "a server that fails before it is ready lets go too")
}
