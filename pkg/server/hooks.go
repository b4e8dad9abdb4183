package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"
)

// PostStartHookFunc runs once the server listens. ctx is cancelled when shutdown starts.
type PostStartHookFunc func(ctx context.Context) error

// PreShutdownHookFunc runs when shutdown starts, before requests are drained.
type PreShutdownHookFunc func() error

// HookState is a post-start hook's progress, as published and shown in readyz.
type HookState struct {
	Name       string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Err        error
}

// Duration is how long the hook ran, zero while it runs.
func (h HookState) Duration() time.Duration {
	if h.FinishedAt.IsZero() || h.StartedAt.IsZero() {
		return 0
	}
	return h.FinishedAt.Sub(h.StartedAt)
}

type postStartHook struct {
	fn         PostStartHookFunc
	registrant string
	done       chan struct{}
	state      HookState
}

type preShutdownHook struct {
	name string
	fn   PreShutdownHookFunc
}

// hookRegistry holds the named hooks; names are unique so a stuck hook is visible by name.
type hookRegistry struct {
	mu          sync.Mutex
	started     bool
	postStart   map[string]*postStartHook
	order       []string
	preShutdown []preShutdownHook
	preNames    map[string]string
}

func newHookRegistry() *hookRegistry {
	return &hookRegistry{postStart: map[string]*postStartHook{}, preNames: map[string]string{}}
}

// callerLocation names who registered a hook so a duplicate's error can point at the first one.
func callerLocation(skip int) string {
	_, file, line, ok := runtime.Caller(skip + 1)
	if !ok {
		return "unknown"
	}
	return fmt.Sprintf("%s:%d", file, line)
}

func (r *hookRegistry) addPostStart(name string, fn PostStartHookFunc, registrant string) error {
	if name == "" {
		return errors.New("missing name for post-start hook")
	}
	if fn == nil {
		return fmt.Errorf("hook func may not be nil: %q", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return fmt.Errorf("unable to add %q because post-start hooks have already started", name)
	}
	if prev, ok := r.postStart[name]; ok {
		return fmt.Errorf("unable to add %q because it was already registered by: %s", name, prev.registrant)
	}
	r.postStart[name] = &postStartHook{fn: fn, registrant: registrant, done: make(chan struct{}), state: HookState{Name: name}}
	r.order = append(r.order, name)
	return nil
}

func (r *hookRegistry) addPreShutdown(name string, fn PreShutdownHookFunc, registrant string) error {
	if name == "" {
		return errors.New("missing name for pre-shutdown hook")
	}
	if fn == nil {
		return fmt.Errorf("hook func may not be nil: %q", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.preNames[name]; ok {
		return fmt.Errorf("unable to add %q because it was already registered by: %s", name, prev)
	}
	r.preNames[name] = registrant
	r.preShutdown = append(r.preShutdown, preShutdownHook{name: name, fn: fn})
	return nil
}

// snapshot returns the hooks' states sorted by name.
func (r *hookRegistry) snapshot() []HookState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]HookState, 0, len(r.postStart))
	for _, h := range r.postStart {
		out = append(out, h.state)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// names returns the post-start hook names in registration order.
func (r *hookRegistry) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

func (r *hookRegistry) done(name string) (<-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.postStart[name]
	if !ok {
		return nil, false
	}
	return h.done, true
}

func (r *hookRegistry) markStarted() {
	r.mu.Lock()
	r.started = true
	r.mu.Unlock()
}

func (r *hookRegistry) update(name string, f func(*HookState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.postStart[name].state)
}

func (r *hookRegistry) finish(name string) {
	r.mu.Lock()
	h := r.postStart[name]
	r.mu.Unlock()
	close(h.done)
}

func (r *hookRegistry) hook(name string) PostStartHookFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.postStart[name].fn
}

func (r *hookRegistry) preShutdownHooks() []preShutdownHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]preShutdownHook(nil), r.preShutdown...)
}
