package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/healthz"
)

// readinessInterval re-runs the readyz checks when nothing told the server that something
// changed: some checks (etcd's health) change without telling anyone.
const readinessInterval = time.Second

// readiness is the last readyz answer. CheckReadiness is the only code that computes it.
type readiness struct {
	seq  atomic.Uint64 // numbers check runs, so an older run never overwrites a newer answer
	kick chan struct{}

	mu       sync.Mutex
	recorded uint64
	ready    bool
	results  []healthz.Result
}

// CheckReadiness runs every readyz check once and records the answer. It is the one place
// readiness is decided: the /readyz handler and the server's own loop both call it, and the
// first time every check passes it fires HasBeenReady and the server enters Running.
func (s *Server) CheckReadiness(r *http.Request) []healthz.Result {
	seq := s.ready.seq.Add(1)
	results := healthz.Run(r, s.allReadyzChecks())
	ready := true
	for _, res := range results {
		ready = ready && res.Err == nil
	}
	// Record first, so whoever the signal and the state wake up publishes this answer.
	s.ready.mu.Lock()
	changed := false
	if seq > s.ready.recorded {
		changed = s.ready.ready != ready || !sameResults(s.ready.results, results)
		s.ready.recorded, s.ready.ready, s.ready.results = seq, ready, results
	}
	s.ready.mu.Unlock()
	if ready {
		s.signals.HasBeenReady.Signal()
		s.state.enter(StateRunning)
	}
	if changed {
		s.notify()
	}
	return results
}

// Readiness is the last recorded answer: whether every readyz check passed, and each
// check's outcome. It runs nothing.
func (s *Server) Readiness() (ready bool, results []healthz.Result) {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	return s.ready.ready, s.ready.results
}

// RecheckReadiness asks for the readyz checks to run again soon; many calls coalesce. Call it
// when something a check reads has changed (the gateway calls it when an instance's state
// arrives).
func (s *Server) RecheckReadiness() {
	select {
	case s.ready.kick <- struct{}{}:
	default:
	}
}

// readinessLoop checks readiness whenever asked, and every readinessInterval, until ctx ends.
func (s *Server) readinessLoop(ctx context.Context) {
	t := time.NewTicker(readinessInterval)
	defer t.Stop()
	for {
		s.recheckNow(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.ready.kick:
		case <-t.C:
		}
	}
}

func sameResults(a, b []healthz.Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].CheckName != b[i].CheckName || (a[i].Err == nil) != (b[i].Err == nil) || a[i].NoteText != b[i].NoteText {
			return false
		}
		if a[i].Err != nil && a[i].Err.Error() != b[i].Err.Error() {
			return false
		}
	}
	return true
}

// recheckNow runs the readyz checks as a /readyz request would, bounded in time.
func (s *Server) recheckNow(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "/readyz", nil)
	s.CheckReadiness(req)
}
