package filters

import (
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
)

var readOnlyVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// WithMaxInFlightLimit caps concurrent non-long-running requests, read-only and mutating
// separately as kube does; over the cap a request gets 429 with Retry-After at once rather
// than queueing, so an overloaded server sheds load instead of timing everyone out.
// A limit of 0 disables that class's cap.
func WithMaxInFlightLimit(next http.Handler, readOnly, mutating int) http.Handler {
	ro := newSemaphore(readOnly)
	mu := newSemaphore(mutating)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		sem := mu
		if IsGRPC(r) {
			if IsGRPCReadOnly(r) {
				sem = ro
			}
		} else if info, ok := requestinfo.From(r.Context()); ok && (readOnlyVerbs[info.Verb] || !info.IsResourceRequest && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			sem = ro
		}
		if !sem.tryAcquire() {
			// As kube: system:masters (super-admins and the loopback client) always get an
			// answer rather than a 429.
			if u, ok := user.From(r.Context()); ok && slices.Contains(u.Groups, user.SystemPrivilegedGroup) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			WriteError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				"Too many requests, please try again later.")
			return
		}
		defer sem.release()
		next.ServeHTTP(w, r)
	})
}

type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n <= 0 {
		return nil
	}
	return make(semaphore, n)
}

func (s semaphore) tryAcquire() bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s semaphore) release() {
	if s != nil {
		<-s
	}
}
