package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// journal records what modules did, in order.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) { j.mu.Lock(); j.events = append(j.events, e); j.mu.Unlock() }
func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

func (j *journal) index(t *testing.T, e string) int {
	t.Helper()
	i := slices.Index(j.list(), e)
	require.GreaterOrEqual(t, i, 0, "%q in %v", e, j.list())
	return i
}

// module records its init, start and stop; runErr, if set, is what Run returns at once.
func (j *journal) module(name string, runErr error, deps ...string) Module {
	return Module{Name: name, Deps: deps, Init: func(context.Context, *slog.Logger) (Service, error) {
		j.add("init " + name)
		return ServiceFunc(func(ctx context.Context) error {
			if runErr != nil {
				return runErr
			}
			<-ctx.Done()
			j.add("stop " + name)
			return nil
		}), nil
	}}
}

func newProcess() *Process {
	p := New()
	p.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return p
}

func TestModulesStartAfterAndStopBeforeWhatTheyNeed(t *testing.T) {
	j := &journal{}
	p := newProcess()
	p.Register(j.module("etcd", nil))
	p.Register(j.module("nats", nil))
	p.Register(j.module("core", nil, "etcd", "nats"))
	p.Register(j.module("extensions", nil, "etcd", "nats"))
	p.Register(j.module("gateway", nil, "nats", "core", "extensions"))
	p.Register(j.module("unused", nil))
	p.Register(Module{Name: "all", Deps: []string{"gateway"}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, "all") }()
	require.Eventually(t, func() bool { return slices.Contains(j.list(), "init gateway") }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.NotContains(t, j.list(), "init unused", "only what the target needs runs")

	before := func(a, b string) {
		assert.Less(t, j.index(t, a), j.index(t, b), "%s before %s", a, b)
	}
	before("init etcd", "init core")
	before("init nats", "init core")
	before("init core", "init gateway")
	before("init extensions", "init gateway")
	before("stop gateway", "stop core")
	before("stop gateway", "stop extensions")
	before("stop core", "stop etcd")
	before("stop extensions", "stop nats")
}

func TestAFailingModuleStopsTheProcess(t *testing.T) {
	j := &journal{}
	p := newProcess()
	p.Register(j.module("nats", nil))
	p.Register(j.module("core", errors.New("hook failed"), "nats"))
	p.Register(j.module("gateway", nil, "nats"))
	p.Register(Module{Name: "all", Deps: []string{"core", "gateway"}})
	err := p.Run(context.Background(), "all")
	require.ErrorContains(t, err, "core: hook failed")
	assert.NotContains(t, err.Error(), "gateway", "the others stop cleanly")
	assert.Contains(t, j.list(), "stop gateway")
	assert.Contains(t, j.list(), "stop nats")
}

func TestAModuleThatEndsByItselfIsAFailure(t *testing.T) {
	p := newProcess()
	p.Register(Module{Name: "quitter", Init: func(context.Context, *slog.Logger) (Service, error) {
		return ServiceFunc(func(context.Context) error { return nil }), nil
	}})
	require.ErrorContains(t, p.Run(context.Background(), "quitter"), "quitter: stopped by itself")
}

func TestInitFailureStopsWhatStarted(t *testing.T) {
	j := &journal{}
	p := newProcess()
	p.Register(j.module("nats", nil))
	p.Register(Module{Name: "core", Deps: []string{"nats"}, Init: func(context.Context, *slog.Logger) (Service, error) {
		return nil, errors.New("--tls-cert-file is required")
	}})
	p.Register(j.module("gateway", nil, "core"))
	err := p.Run(context.Background(), "gateway")
	require.ErrorContains(t, err, "core: --tls-cert-file is required")
	assert.Equal(t, []string{"init nats", "stop nats"}, j.list(), "the gateway never starts")
}

func TestBadModuleTables(t *testing.T) {
	p := newProcess()
	p.Register(Module{Name: "a", Deps: []string{"b"}})
	p.Register(Module{Name: "b", Deps: []string{"a"}})
	p.Register(Module{Name: "c", Deps: []string{"missing"}})
	assert.ErrorContains(t, p.Run(context.Background(), "a"), "cycle")
	assert.ErrorContains(t, p.Run(context.Background(), "c"), `unknown module "missing"`)
	assert.Panics(t, func() { p.Register(Module{Name: "a"}) })
	assert.Panics(t, func() { p.Command("x", "y", "c") })
}

// Modules independent of each other start at the same time: each of these two waits, in its
// Init, for the other's Init to begin, which only concurrent starts allow.
func TestIndependentModulesStartTogether(t *testing.T) {
	p := newProcess()
	aIn, bIn := make(chan struct{}), make(chan struct{})
	meet := func(mine, theirs chan struct{}) func(context.Context, *slog.Logger) (Service, error) {
		return func(context.Context, *slog.Logger) (Service, error) {
			close(mine)
			select {
			case <-theirs:
				return nil, nil
			case <-time.After(10 * time.Second):
				return nil, errors.New("started one after the other")
			}
		}
	}
	p.Register(Module{Name: "etcd", Init: meet(aIn, bIn)})
	p.Register(Module{Name: "nats", Init: meet(bIn, aIn)})
	p.Register(Module{Name: "all", Deps: []string{"etcd", "nats"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop as soon as everything started
	require.NoError(t, p.Run(ctx, "all"))
}
