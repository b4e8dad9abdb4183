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

	// InFlight counts non-long-running requests so shutdown can drain them.
	InFlight SafeWaitGroup

	mu          sync.Mutex
	healthz     []healthz.Checker
	livez       []healthz.Checker
	readyz      []healthz.Checker
	transports  []boundTransport
	phases      []Phase
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

// Phase is a startup phase reached, for the startup timeline.
type Phase struct {
	Name string
	At   time.Time
}

// New makes a Server named after its service (used in logs).
func New(name string, opts Options, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{name: name, opts: opts, log: log, hooks: newHookRegistry(), startedAt: processStart}
	s.signals = newLifecycleSignals(func(sig string, at time.Time) {
		s.log.Info("lifecycle signal", "signal", sig)
		if sig == "HasBeenReady" {
			s.MarkPhase("ready") // whoever saw readiness first: the watcher or a /readyz request
			return
		}
		s.changed()
	})
	s.healthz = []healthz.Checker{healthz.PingHealthz}
	s.livez = []healthz.Checker{healthz.PingHealthz}
	s.readyz = []healthz.Checker{healthz.PingHealthz}
	s.shutdownCheck = healthz.SignalCheck("shutdown", s.signals.ShutdownInitiated.Signaled(), errors.New("process is shutting down"))
	return s
}

// Name is the service name.
func (s *Server) Name() string { return s.name }

// Signals are the server's lifecycle signals.
func (s *Server) Signals() *LifecycleSignals { return &s.signals }

// StartedAt is when the process started, the origin of its startup timeline.
func (s *Server) StartedAt() time.Time { return s.startedAt }

// OnChange registers f to be called (synchronously, keep it cheap) whenever a hook, signal or
// phase changes, so lifecycle publishers can push state instead of polling.
func (s *Server) OnChange(f func()) {
	s.mu.Lock()
	s.onChange = append(s.onChange, f)
	s.mu.Unlock()
}

func (s *Server) changed() {
	s.mu.Lock()
	fs := append([]func(){}, s.onChange...)
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// MarkPhase records that a startup phase was reached.
func (s *Server) MarkPhase(name string) {
	s.mu.Lock()
	s.phases = append(s.phases, Phase{Name: name, At: time.Now()})
	s.mu.Unlock()
	s.log.Info("startup phase reached", "phase", name, "sinceStart", time.Since(s.startedAt).String())
	s.changed()
}

// Phases returns the phases reached so far in order.
func (s *Server) Phases() []Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Phase(nil), s.phases...)
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
// count for HasBeenReady too.
func (s *Server) InstallHealthHandlers(mux *http.ServeMux, extraReadyz func() []healthz.Checker) {
	s.mu.Lock()
	s.extraReadyz = extraReadyz
	s.mu.Unlock()
	healthz.Install(mux, "healthz", s.healthzChecks)
	healthz.Install(mux, "livez", s.livezChecks)
	readyz := healthz.Handler("readyz", s.allReadyzChecks)
	// The first 200 from /readyz fires HasBeenReady, as in kube, so no client sees the server
	// ready before the signal says so.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &codeRecorder{ResponseWriter: w}
		readyz.ServeHTTP(rec, r)
		if rec.code == http.StatusOK && r.URL.Path == "/readyz" && len(r.URL.Query()["exclude"]) == 0 {
			s.signals.HasBeenReady.Signal()
		}
	})
	mux.Handle("/readyz", h)
	mux.Handle("/readyz/", h)
}

type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (c *codeRecorder) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeRecorder) Write(p []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.ResponseWriter.Write(p)
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

// CheckResult is one readyz check's outcome.
type CheckResult struct {
	Name string
	Err  error
}

// RunReadyzChecks runs every readyz check and reports each result.
func (s *Server) RunReadyzChecks() []CheckResult {
	req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	checks := s.allReadyzChecks()
	out := make([]CheckResult, 0, len(checks))
	ready := true
	for _, c := range checks {
		err := c.Check(req)
		ready = ready && err == nil
		out = append(out, CheckResult{Name: c.Name(), Err: err})
	}
	if ready {
		// The first time every readyz check passes, wherever they ran, is HasBeenReady.
		s.signals.HasBeenReady.Signal()
	}
	return out
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
	s.MarkPhase("listening")

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
	go s.watchReady(hookCtx)

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

// watchReady fires HasBeenReady the first time all readyz checks pass.
func (s *Server) watchReady(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		s.RunReadyzChecks()
		if s.signals.HasBeenReady.IsSignaled() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// shutdown is the two-phase graceful shutdown: readyz fails, requests are served for the
// delay, then the listener stops (or, with ShutdownSendRetryAfter, new requests get 429 until
// drained), in-flight requests drain, and the transports stop.
func (s *Server) shutdown(transports []boundTransport, immediate bool) error {
	sig := &s.signals
	sig.ShutdownInitiated.Signal()
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
