// Package server is apichain's generic server: named post-start and pre-shutdown hooks,
// health checks, lifecycle signals and the two-phase graceful shutdown that every apichain
// process (gateway and backends) runs, after kube-apiserver's pkg/server.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/healthz"
)

// Options are the generic server's flags (see AddFlags).
type Options struct {
	// ShutdownDelayDuration keeps serving after shutdown starts so load balancers and the
	// gateway can stop routing here first.
	ShutdownDelayDuration time.Duration
	// ShutdownSendRetryAfter keeps the listener open until in-flight requests drained,
	// answering new requests with 429 and Retry-After, instead of closing it after the delay.
	ShutdownSendRetryAfter bool
	// ShutdownTimeout bounds draining in-flight requests.
	ShutdownTimeout time.Duration
	// LivezGracePeriod is how long livez checks pass regardless after start.
	LivezGracePeriod time.Duration
	// TestingSlowHook adds a post-start hook that takes this long (tests of diagnosis).
	TestingSlowHook time.Duration
}

// DefaultOptions are kube-apiserver's defaults where it has them.
func DefaultOptions() Options {
	return Options{ShutdownTimeout: 60 * time.Second}
}

// Transport serves requests on a listener and is driven through shutdown by the Server.
type Transport interface {
	// Serve blocks serving ln until StopListening or Shutdown.
	Serve(ln net.Listener) error
	// StopListening closes the listener; accepted connections keep working.
	StopListening() error
	// Shutdown ends long-running requests, waits for the rest, and closes everything,
	// forcibly once ctx is done.
	Shutdown(ctx context.Context) error
}

// Server is one process's generic server.
type Server struct {
	name    string
	opts    Options
	log     *slog.Logger
	hooks   *hookRegistry
	signals LifecycleSignals
	state   *stateMachine
	ready   readiness

	// InFlight counts non-long-running requests so shutdown can drain them.
	InFlight SafeWaitGroup

	mu          sync.Mutex
	healthz     []healthz.Checker
	livez       []healthz.Checker
	readyz      []healthz.Checker
	transports  []boundTransport
	onChange    []func()
	deferMuxSig bool
	startedAt   time.Time
	// shutdownCheck is listed last in readyz, as kube lists it.
	shutdownCheck healthz.Checker
	extraReadyz   func() []healthz.Checker
}

type boundTransport struct {
	name string
	t    Transport
	ln   net.Listener
}

// processStart approximates when the process started (package initialization), so the
// startup timeline includes what happens before a server is built.
var processStart = time.Now()

// New makes a Server named after its service (used in logs).
func New(name string, opts Options, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{name: name, opts: opts, log: log, hooks: newHookRegistry(), startedAt: processStart}
	s.ready.kick = make(chan struct{}, 1)
	releaseGC := HoldStartupGC()
	s.state = newStateMachine(processStart, func(st State) {
		s.log.Info("server state", "state", st.String(), "sinceStart", time.Since(s.startedAt).String())
		if st >= StateRunning { // ready, or stopping without having been
			releaseGC()
		}
		s.changed()
	})
	s.signals = newLifecycleSignals(func(sig string, at time.Time) {
		s.log.Info("lifecycle signal", "signal", sig)
		s.changed()
	})
	s.healthz = []healthz.Checker{healthz.PingHealthz}
	s.livez = []healthz.Checker{healthz.PingHealthz}
	s.readyz = []healthz.Checker{healthz.PingHealthz}
	s.shutdownCheck = healthz.SignalCheck("shutdown", s.signals.ShutdownInitiated.Signaled(), errors.New("process is shutting down"))
	if d := opts.TestingSlowHook; d > 0 {
		_ = s.AddPostStartHook("testing-slow-hook", func(ctx context.Context) error {
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}
	return s
}

// Name is the service name.
func (s *Server) Name() string { return s.name }

// Signals are the server's lifecycle signals.
func (s *Server) Signals() *LifecycleSignals { return &s.signals }

// StartedAt is when the process started, the origin of its startup timeline.
func (s *Server) StartedAt() time.Time { return s.startedAt }

// State is where the server is in its life.
func (s *Server) State() State { return s.state.current() }

// Transitions are the states the server went through, with times, oldest first.
func (s *Server) Transitions() []Transition { return s.state.history() }

// OnChange registers f to be called (synchronously, keep it cheap) whenever a hook, signal,
// state or the readiness answer changes, so lifecycle publishers can push state instead of
// polling.
func (s *Server) OnChange(f func()) {
	s.mu.Lock()
	s.onChange = append(s.onChange, f)
	s.mu.Unlock()
}

// NotifyChange tells the OnChange listeners that something they report changed outside the
// server (a backend's served group/versions), so the lifecycle state is published again.
func (s *Server) NotifyChange() { s.notify() }

// changed tells listeners, and asks for readiness to be checked again: what changed (a hook
// finishing, say) may make the server ready.
func (s *Server) changed() {
	s.notify()
	s.RecheckReadiness()
}

func (s *Server) notify() {
	s.mu.Lock()
	fs := append([]func(){}, s.onChange...)
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// DeferMuxAndDiscoveryComplete tells Run not to fire MuxAndDiscoveryComplete by itself: the
// caller fires it once its discovery is complete.
func (s *Server) DeferMuxAndDiscoveryComplete() {
	s.mu.Lock()
	s.deferMuxSig = true
	s.mu.Unlock()
}

// AddPostStartHook registers a named hook to run once the server listens.
func (s *Server) AddPostStartHook(name string, hook PostStartHookFunc) error {
	if err := s.hooks.addPostStart(name, hook, callerLocation(1)); err != nil {
		return err
	}
	check := s.hookCheck(name)
	s.mu.Lock()
	s.healthz = append(s.healthz, check)
	s.livez = append(s.livez, check)
	s.readyz = append(s.readyz, check)
	s.mu.Unlock()
	return nil
}

// AddPreShutdownHook registers a named hook to run when shutdown starts.
func (s *Server) AddPreShutdownHook(name string, hook PreShutdownHookFunc) error {
	return s.hooks.addPreShutdown(name, hook, callerLocation(1))
}

func (s *Server) hookCheck(name string) healthz.Checker {
	done, _ := s.hooks.done(name)
	return healthz.NamedCheck("poststarthook/"+name, func(*http.Request) error {
		select {
		case <-done:
			return nil
		default:
			return errors.New("not finished")
		}
	})
}

// AddHealthChecks adds checks to healthz, livez (after the grace period) and readyz.
func (s *Server) AddHealthChecks(checks ...healthz.Checker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.healthz = append(s.healthz, checks...)
	for _, c := range checks {
		s.livez = append(s.livez, healthz.DelayedCheck(c, s.opts.LivezGracePeriod, time.Now))
	}
	s.readyz = append(s.readyz, checks...)
}

// AddReadyzChecks adds checks to readyz only.
func (s *Server) AddReadyzChecks(checks ...healthz.Checker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readyz = append(s.readyz, checks...)
}

// ReadyzChecks returns the current readyz checks, "shutdown" last.
func (s *Server) ReadyzChecks() []healthz.Checker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]healthz.Checker(nil), s.readyz...), s.shutdownCheck)
}

func (s *Server) healthzChecks() []healthz.Checker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]healthz.Checker(nil), s.healthz...)
}

func (s *Server) livezChecks() []healthz.Checker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]healthz.Checker(nil), s.livez...)
}

// InstallHealthHandlers serves /healthz, /livez and /readyz (and their per-check subpaths).
// extraReadyz, if set, adds checks computed per request (the gateway's remote instances); they
// count for readiness too.
func (s *Server) InstallHealthHandlers(mux *http.ServeMux, extraReadyz func() []healthz.Checker) {
	s.mu.Lock()
	s.extraReadyz = extraReadyz
	s.mu.Unlock()
	healthz.Install(mux, "healthz", s.healthzChecks)
	healthz.Install(mux, "livez", s.livezChecks)
	// Every /readyz request runs the checks through CheckReadiness, so the first 200 a client
	// sees has already fired HasBeenReady, as in kube.
	healthz.InstallHandler(mux, "readyz", healthz.ResultsHandler("readyz", s.CheckReadiness))
}

// allReadyzChecks are the readyz checks including extra ones, "shutdown" last.
func (s *Server) allReadyzChecks() []healthz.Checker {
	checks := s.ReadyzChecks()
	s.mu.Lock()
	extra := s.extraReadyz
	s.mu.Unlock()
	if extra == nil {
		return checks
	}
	last := len(checks) - 1
	return append(append(checks[:last:last], extra()...), checks[last])
}

// Hooks returns the post-start hooks' states.
func (s *Server) Hooks() []HookState { return s.hooks.snapshot() }

// AddTransport serves t on ln when Run starts. ln is bound by the caller so its address is
// known (and published) before serving.
func (s *Server) AddTransport(name string, t Transport, ln net.Listener) {
	s.mu.Lock()
	s.transports = append(s.transports, boundTransport{name: name, t: t, ln: ln})
	s.mu.Unlock()
}

func (s *Server) boundTransports() []boundTransport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]boundTransport(nil), s.transports...)
}

// ErrHookFailed wraps the error of a post-start hook that failed.
var ErrHookFailed = errors.New("post-start hook failed")

// Run serves until ctx is cancelled, then shuts down gracefully. It returns an error if a
// transport fails or a post-start hook fails (the process must then exit non-zero).
func (s *Server) Run(ctx context.Context) error {
	transports := s.boundTransports()
	if len(transports) == 0 {
		return errors.New("no transport to serve")
	}
	serveErr := make(chan error, len(transports))
	for _, bt := range transports {
		s.log.Info("serving", "transport", bt.name, "address", bt.ln.Addr().String())
		go func() {
			if err := bt.t.Serve(bt.ln); err != nil && !isClosedErr(err) {
				serveErr <- fmt.Errorf("%s transport: %w", bt.name, err)
			}
		}()
	}
	s.state.enter(StateStarting)

	hookCtx, cancelHooks := context.WithCancel(ctx)
	defer cancelHooks()
	hookErr := make(chan error, 1)
	s.runPostStartHooks(hookCtx, hookErr)

	s.mu.Lock()
	deferMux := s.deferMuxSig
	s.mu.Unlock()
	if !deferMux {
		s.signals.MuxAndDiscoveryComplete.Signal()
	}
	readinessCtx, stopReadiness := context.WithCancel(context.Background())
	defer stopReadiness()
	go s.readinessLoop(readinessCtx)

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-hookErr:
		runErr = err
	case err := <-serveErr:
		runErr = err
	}
	cancelHooks()
	if runErr != nil {
		s.log.Error("server failed, shutting down", "err", runErr)
	}
	if err := s.shutdown(transports, runErr != nil); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		s.state.enter(StateFailed)
	} else {
		s.state.enter(StateTerminated)
	}
	return runErr
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed)
}

func (s *Server) runPostStartHooks(ctx context.Context, failed chan<- error) {
	s.hooks.markStarted()
	for _, name := range s.hooks.names() {
		fn := s.hooks.hook(name)
		go func() {
			start := time.Now()
			s.hooks.update(name, func(h *HookState) { h.StartedAt = start })
			s.log.Info("post-start hook started", "hook", name)
			s.changed()
			err := runHook(ctx, fn)
			end := time.Now()
			s.hooks.update(name, func(h *HookState) { h.FinishedAt = end; h.Err = err })
			if err != nil {
				s.log.Error("post-start hook failed", "hook", name, "duration", end.Sub(start).String(), "err", err)
				s.changed()
				select {
				case failed <- fmt.Errorf("%w: %q: %v", ErrHookFailed, name, err):
				default:
				}
				return
			}
			s.log.Info("post-start hook finished", "hook", name, "duration", end.Sub(start).String())
			s.hooks.finish(name)
			s.changed()
		}()
	}
}

// runHook turns a hook's panic into its error, so one bad hook fails the process loudly
// with its name rather than crashing without context.
func runHook(ctx context.Context, fn PostStartHookFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx)
}

// shutdown is the two-phase graceful shutdown: readyz fails, requests are served for the
// delay, then the listener stops (or, with ShutdownSendRetryAfter, new requests get 429 until
// drained), in-flight requests drain, and the transports stop.
func (s *Server) shutdown(transports []boundTransport, immediate bool) error {
	sig := &s.signals
	sig.ShutdownInitiated.Signal()
	s.state.enter(StateStopping)
	s.recheckNow(context.Background()) // the published answer says "not ready" from now on
	s.log.Info("shutdown initiated", "shutdownDelayDuration", s.opts.ShutdownDelayDuration.String())

	var preErr error
	go func() {
		defer sig.PreShutdownHooksStopped.Signal()
		preErr = s.runPreShutdownHooks()
	}()

	if !immediate && s.opts.ShutdownDelayDuration > 0 {
		time.Sleep(s.opts.ShutdownDelayDuration)
	}
	sig.AfterShutdownDelayDuration.Signal()

	stopListening := func() {
		for _, bt := range transports {
			if err := bt.t.StopListening(); err != nil && !isClosedErr(err) {
				s.log.Warn("stop listening", "transport", bt.name, "err", err)
			}
		}
		sig.HTTPServerStoppedListening.Signal()
	}
	s.InFlight.Close()
	sig.NotAcceptingNewRequest.Signal()
	if !s.opts.ShutdownSendRetryAfter {
		stopListening()
	}

	drained := make(chan struct{})
	go func() { s.InFlight.Wait(); close(drained) }()
	timeout := s.opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	select {
	case <-drained:
	case <-time.After(timeout):
		s.log.Warn("in-flight requests did not drain in time", "timeout", timeout.String())
	}
	sig.InFlightRequestsDrained.Signal()
	if s.opts.ShutdownSendRetryAfter {
		stopListening()
	}

	<-sig.PreShutdownHooksStopped.Signaled()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for _, bt := range transports {
		if err := bt.t.Shutdown(ctx); err != nil && !isClosedErr(err) {
			errs = append(errs, fmt.Errorf("%s transport shutdown: %w", bt.name, err))
		}
	}
	s.log.Info("server stopped")
	return errors.Join(append(errs, preErr)...)
}

func (s *Server) runPreShutdownHooks() error {
	var errs []error
	for _, h := range s.hooks.preShutdownHooks() {
		if err := h.fn(); err != nil {
			s.log.Error("pre-shutdown hook failed", "hook", h.name, "err", err)
			errs = append(errs, fmt.Errorf("pre-shutdown hook %q failed: %w", h.name, err))
		}
	}
	return errors.Join(errs...)
}

// RunAlongside is Run with tasks that live as long as the server: they start with it and are
// stopped (their context ends) only after the server has shut down, so a lifecycle publisher
// still announces the shutdown, and watchers keep routing while requests drain.
func (s *Server) RunAlongside(ctx context.Context, tasks ...func(ctx context.Context)) error {
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task(tctx)
		}()
	}
	err := s.Run(ctx)
	stop()
	wg.Wait()
	return err
}
