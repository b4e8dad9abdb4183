package server

import (
	"errors"
	"sync"
)

// ErrDraining is returned by SafeWaitGroup.Add once Wait has started.
var ErrDraining = errors.New("server is draining in-flight requests")

// SafeWaitGroup counts in-flight requests and refuses new ones once draining began, so a
// request cannot slip in after Wait decided the server is idle.
type SafeWaitGroup struct {
	mu      sync.RWMutex
	wg      sync.WaitGroup
	closing bool
}

// Add counts delta more requests, or fails with ErrDraining once Wait was called.
func (w *SafeWaitGroup) Add(delta int) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closing && delta > 0 {
		return ErrDraining
	}
	w.wg.Add(delta)
	return nil
}

// Done marks one request finished.
func (w *SafeWaitGroup) Done() { w.wg.Done() }

// Close refuses further Adds.
func (w *SafeWaitGroup) Close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
}

// Wait refuses further Adds and blocks until every counted request is done.
func (w *SafeWaitGroup) Wait() {
	w.Close()
	w.wg.Wait()
}
