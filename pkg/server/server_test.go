package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeTransport records the order of shutdown calls relative to signals.
type fakeTransport struct {
	mu      sync.Mutex
	events  []string
	stopped chan struct{}
}

func newFakeTransport() *fakeTransport { return &fakeTransport{stopped: make(chan struct{})} }

func (f *fakeTransport) record(e string) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }
func (f *fakeTransport) Serve(net.Listener) error {
	<-f.stopped
	return net.ErrClosed
}
func (f *fakeTransport) StopListening() error { f.record("stop-listening"); return nil }
func (f *fakeTransport) Shutdown(context.Context) error {
	f.record("shutdown")
	close(f.stopped)
	return nil
}

type nopListener struct{ net.Listener }

func (nopListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func newTestServer(t *testing.T, opts Options) (*Server, *fakeTransport) {
	t.Helper()
	s := New("test", opts, quietLog())
	ft := newFakeTransport()
	s.AddTransport("fake", ft, nopListener{})
	return s, ft
}

func TestAddPostStartHookRules(t *testing.T) {
	s := New("test", DefaultOptions(), quietLog())
	ok := func(context.Context) error { return nil }

	assert.ErrorContains(t, s.AddPostStartHook("", ok), "missing name")
	assert.ErrorContains(t, s.AddPostStartHook("nil", nil), "may not be nil")
	require.NoError(t, s.AddPostStartHook("first", ok))
	err := s.AddPostStartHook("first", ok)
	require.Error(t, err)
	// The duplicate's error names where the first registration happened.
	assert.Contains(t, err.Error(), "server_test.go")

	s.hooks.markStarted()
	assert.ErrorContains(t, s.AddPostStartHook("late", ok), "already started")
}

func TestAddPreShutdownHookRules(t *testing.T) {
	s := New("test", DefaultOptions(), quietLog())
	ok := func() error { return nil }
	assert.ErrorContains(t, s.AddPreShutdownHook("", ok), "missing name")
	assert.ErrorContains(t, s.AddPreShutdownHook("x", nil), "may not be nil")
	require.NoError(t, s.AddPreShutdownHook("x", ok))
	assert.ErrorContains(t, s.AddPreShutdownHook("x", ok), "server_test.go")
}

func readyz(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	mux := http.NewServeMux()
	s.InstallHealthHandlers(mux, nil)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestPostStartHooksRunConcurrentlyAndGateReadiness(t *testing.T) {
	s, _ := newTestServer(t, DefaultOptions())
	release := make(chan struct{})
	bothStarted := make(chan struct{}, 2)
	for _, name := range []string{"a", "b"} {
		require.NoError(t, s.AddPostStartHook(name, func(ctx context.Context) error {
			bothStarted <- struct{}{}
			<-release
			return nil
		}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	// Both hooks start before either finishes: they run concurrently.
	<-bothStarted
	<-bothStarted
	code, body := readyz(t, s, "/readyz?verbose")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "[-]poststarthook/a failed: reason withheld")
	code, body = readyz(t, s, "/readyz/poststarthook/a")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "not finished")
	assert.False(t, s.Signals().HasBeenReady.IsSignaled())

	close(release)
	select {
	case <-s.Signals().HasBeenReady.Signaled():
	case <-time.After(10 * time.Second):
		t.Fatal("HasBeenReady not signaled")
	}
	code, body = readyz(t, s, "/readyz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]poststarthook/b ok")
	for _, h := range s.Hooks() {
		assert.False(t, h.FinishedAt.IsZero(), h.Name)
		assert.NoError(t, h.Err)
	}
	cancel()
	require.NoError(t, <-done)
}

func TestFailedPostStartHookFailsRun(t *testing.T) {
	s, _ := newTestServer(t, DefaultOptions())
	require.NoError(t, s.AddPostStartHook("boom", func(context.Context) error { return errors.New("bad config") }))
	require.NoError(t, s.AddPostStartHook("panics", func(context.Context) error { panic("oops") }))
	err := s.Run(context.Background())
	require.ErrorIs(t, err, ErrHookFailed)
	assert.True(t, strings.Contains(err.Error(), "boom") || strings.Contains(err.Error(), "panics"), err.Error())
	assert.True(t, s.Signals().ShutdownInitiated.IsSignaled())
}

func TestShutdownOrder(t *testing.T) {
	for _, retryAfter := range []bool{false, true} {
		t.Run(map[bool]string{false: "close-listener", true: "send-retry-after"}[retryAfter], func(t *testing.T) {
			opts := DefaultOptions()
			opts.ShutdownDelayDuration = 50 * time.Millisecond
			opts.ShutdownSendRetryAfter = retryAfter
			s, ft := newTestServer(t, opts)

			// Every signal's channel closes: observers waiting on each one all return.
			var observers sync.WaitGroup
			for _, sig := range s.Signals().All() {
				observers.Add(1)
				go func() { defer observers.Done(); <-sig.Signaled() }()
			}
			preErr := errors.New("pre failed")
			require.NoError(t, s.AddPreShutdownHook("p1", func() error { return preErr }))

			// One request in flight when shutdown starts: drain must wait for it.
			require.NoError(t, s.InFlight.Add(1))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			<-s.Signals().HasBeenReady.Signaled()
			cancel()
			<-s.Signals().NotAcceptingNewRequest.Signaled()
			assert.ErrorIs(t, s.InFlight.Add(1), ErrDraining, "new requests are refused while draining")
			assert.False(t, s.Signals().InFlightRequestsDrained.IsSignaled())
			s.InFlight.Done()

			err := <-done
			assert.ErrorIs(t, err, preErr)

			at := func(sig *Signal) time.Time { return sig.At() }
			sg := s.Signals()
			assert.False(t, at(sg.ShutdownInitiated).After(at(sg.AfterShutdownDelayDuration)))
			assert.GreaterOrEqual(t, at(sg.AfterShutdownDelayDuration).Sub(at(sg.ShutdownInitiated)), opts.ShutdownDelayDuration)
			assert.False(t, at(sg.AfterShutdownDelayDuration).After(at(sg.NotAcceptingNewRequest)))
			assert.False(t, at(sg.NotAcceptingNewRequest).After(at(sg.InFlightRequestsDrained)))
			if retryAfter {
				// The listener stays open (answering 429) until in-flight requests drained.
				assert.False(t, at(sg.HTTPServerStoppedListening).Before(at(sg.InFlightRequestsDrained)))
			} else {
				assert.False(t, at(sg.NotAcceptingNewRequest).After(at(sg.HTTPServerStoppedListening)))
				assert.False(t, at(sg.HTTPServerStoppedListening).After(at(sg.InFlightRequestsDrained)))
			}
			ft.mu.Lock()
			assert.Equal(t, []string{"stop-listening", "shutdown"}, ft.events)
			ft.mu.Unlock()
			for _, sig := range sg.All() {
				assert.True(t, sig.IsSignaled(), sig.Name())
			}
			code, body := readyz(t, s, "/readyz?verbose")
			assert.Equal(t, http.StatusInternalServerError, code)
			assert.Contains(t, body, "[-]shutdown failed")
			observers.Wait()
		})
	}
}

func TestSignalIdempotent(t *testing.T) {
	var calls int
	s := newSignal("X", func(string, time.Time) { calls++ })
	assert.False(t, s.IsSignaled())
	s.Signal()
	first := s.At()
	s.Signal()
	assert.True(t, s.IsSignaled())
	assert.Equal(t, first, s.At())
	assert.Equal(t, 1, calls)
}
