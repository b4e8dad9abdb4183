// Package process assembles an apichain process from named modules, after dskit's modules:
// a module has a name, the modules it needs, its flags, and how it starts (Init, then Run)
// and stops (Run returns once its context ends). A process runs some target modules and
// everything they need: it starts them in dependency order and stops each one only after
// every module that needs it has stopped, so the gateway drains before the backends it
// delegates to, and they before NATS. Every service's main and the all-in-one are a few
// registered modules and a target.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/apichain/apichain/pkg/server"
	"github.com/spf13/pflag"
)

// Module is one named part of a process.
type Module struct {
	Name string
	// Deps are the modules that must be running before Init, and keep running until this
	// module stopped.
	Deps []string
	// Flags registers the module's options on the command; nil when it has none.
	Flags func(fs *pflag.FlagSet)
	// Init completes and validates the options and builds the module (binding its listeners,
	// so its address is known before anything that needs it starts). It returns what runs,
	// or nil for a module with nothing to run. A module that only groups others ("all") has
	// no Init.
	Init func(ctx context.Context, log *slog.Logger) (Service, error)
}

// Service is what a module runs: Run serves until ctx ends, then stops gracefully and returns.
// An error, or returning before ctx ends, stops the whole process.
type Service interface {
	Run(ctx context.Context) error
}

// ServiceFunc adapts a function to a Service.
type ServiceFunc func(ctx context.Context) error

// Run calls f.
func (f ServiceFunc) Run(ctx context.Context) error { return f(ctx) }

// CloseOnStop is a Service that waits for the stop and then calls stop: a connection or an
// embedded server that has nothing to do but be closed last.
func CloseOnStop(stop func()) Service {
	return ServiceFunc(func(ctx context.Context) error {
		<-ctx.Done()
		stop()
		return nil
	})
}

// Process is a set of registered modules, of which Run starts some.
type Process struct {
	Log *slog.Logger

	modules map[string]*Module
	order   []string // registration order, so flags and logs are stable
}

// New makes an empty process that logs to slog's default logger until Command sets one.
func New() *Process {
	return &Process{Log: slog.Default(), modules: map[string]*Module{}}
}

// Register adds m; a second module with the same name is a programming error.
func (p *Process) Register(m Module) {
	if _, dup := p.modules[m.Name]; dup || m.Name == "" {
		panic(fmt.Sprintf("process: module %q registered twice or unnamed", m.Name))
	}
	p.modules[m.Name] = &m
	p.order = append(p.order, m.Name)
}

// enter logs that a module entered a state: Starting, Running, Stopping, then Terminated
// or Failed.
func (p *Process) enter(module string, st server.State, err error) {
	if err != nil {
		p.Log.Error("module "+st.String(), "module", module, "err", err)
		return
	}
	p.Log.Debug("module "+st.String(), "module", module)
}

// resolve lists targets and everything they need, each after its dependencies.
func (p *Process) resolve(targets []string) ([]string, error) {
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		m, ok := p.modules[name]
		if !ok {
			return fmt.Errorf("unknown module %q (known: %v)", name, p.order)
		}
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle: %v", append(path, name))
		case 2:
			return nil
		}
		state[name] = 1
		for _, d := range m.Deps {
			if err := visit(d, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, name)
		return nil
	}
	for _, t := range targets {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type running struct {
	name string
	// initialized closes once Init returned; ok says it succeeded (and Run was launched).
	initialized chan struct{}
	ok          bool
	stop        context.CancelFunc
	done        chan struct{}
	err         error
}

// Run starts targets and what they need, and serves until ctx ends or a module fails; then
// it stops every module after those that need it. It returns the modules' errors.
//
// A module starts as soon as everything it needs has started, so modules independent of each
// other (an embedded etcd and an embedded NATS, say) start at the same time.
func (p *Process) Run(ctx context.Context, targets ...string) error {
	order, err := p.resolve(targets)
	if err != nil {
		return err
	}
	mods := map[string]*running{}
	for _, name := range order {
		mods[name] = &running{name: name, initialized: make(chan struct{}), done: make(chan struct{})}
	}
	failed := make(chan string, len(order))
	initFailed := make(chan error, len(order))
	// Until every module has started, and each server holds it itself until it is ready.
	releaseGC := server.HoldStartupGC()
	server.ReleaseInitGC() // held since package initialisation; the process holds it now
	var inits sync.WaitGroup
	for _, name := range order {
		r := mods[name]
		inits.Add(1)
		go func() {
			defer inits.Done()
			defer close(r.initialized)
			for _, d := range p.modules[name].Deps {
				if <-mods[d].initialized; !mods[d].ok {
					return // a dependency failed: this module never starts
				}
			}
			if len(initFailed) > 0 {
				return // another module failed; start nothing more
			}
			if err := p.start(ctx, r, failed); err != nil {
				initFailed <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	inits.Wait()
	releaseGC()
	close(initFailed)

	var errs []error
	for err := range initFailed {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		select {
		case <-ctx.Done():
		case name := <-failed:
			p.Log.Error("module failed, stopping the process", "module", name, "err", mods[name].err)
		}
	}
	started := map[string]*running{}
	for name, r := range mods {
		if r.ok {
			started[name] = r
		}
	}
	p.stopAll(order, started)

	for _, name := range order {
		if r := started[name]; r != nil && r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, r.err))
		}
	}
	return errors.Join(errs...)
}

// start initializes r's module and launches what it runs; a module that ends by itself, or
// with an error, is reported on failed.
func (p *Process) start(ctx context.Context, r *running, failed chan<- string) error {
	m := p.modules[r.name]
	p.enter(r.name, server.StateStarting, nil)
	var svc Service
	var err error
	if m.Init != nil {
		svc, err = m.Init(ctx, p.Log)
	}
	if err != nil {
		p.enter(r.name, server.StateFailed, err)
		return err
	}
	r.ok = true
	if svc == nil {
		close(r.done)
		p.enter(r.name, server.StateRunning, nil)
		return nil
	}
	var runCtx context.Context
	runCtx, r.stop = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(r.done)
		r.err = svc.Run(runCtx)
		if r.err == nil && runCtx.Err() == nil {
			r.err = errors.New("stopped by itself")
		}
		if runCtx.Err() == nil {
			failed <- r.name
		}
	}()
	p.enter(r.name, server.StateRunning, nil)
	return nil
}

// stopAll stops each started module once every started module that needs it has stopped;
// modules independent of each other stop at the same time.
func (p *Process) stopAll(order []string, started map[string]*running) {
	var wg sync.WaitGroup
	for _, name := range order {
		r := started[name]
		if r == nil {
			continue
		}
		var dependents []*running
		for _, other := range order {
			if o := started[other]; o != nil && slices.Contains(p.modules[other].Deps, name) {
				dependents = append(dependents, o)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range dependents {
				<-d.done
			}
			p.enter(name, server.StateStopping, nil)
			if r.stop != nil {
				r.stop()
			}
			<-r.done
			if r.err != nil {
				p.enter(name, server.StateFailed, r.err)
				return
			}
			p.enter(name, server.StateTerminated, nil)
		}()
	}
	wg.Wait()
}
