package filters

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/server"
)

var drainingStatus = wantStatus{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
	"apiserver is shutting down"}

// waitReturns runs wg.Wait in a goroutine and returns a channel closed when it returns.
func waitReturns(wg *server.SafeWaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

func TestWithWaitGroupDrainsInFlight(t *testing.T) {
	wg := &server.SafeWaitGroup{}
	g := newGate(t)
	h := withInfo(WithWaitGroup(g, wg))

	inFlight := start(h, "GET", "/api/v1/namespaces/ns/pods/p")
	recv(t, g.entered, "the in-flight request")
	wg.Close()

	rec := serve(h, "POST", "/api/v1/namespaces/ns/pods")
	requireRecStatus(t, rec, drainingStatus)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))

	waited := waitReturns(wg)
	select {
	case <-waited:
		t.Fatal("Wait returned while a counted request was in flight")
	default:
	}
	g.open()
	recv(t, waited, "Wait, once the request finished")
	assert.Equal(t, http.StatusOK, recv(t, inFlight, "the in-flight request").Code)
}

func TestWithWaitGroupAfterClose(t *testing.T) {
	cases := []struct {
		method, target string
		wantServed     bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods", false},
		{"POST", "/api/v1/namespaces/ns/pods", false},
		{"GET", "/version", false},
		{"GET", "/readyzfoo/x", true}, // kube's exemption is a plain prefix
		// long-running: never counted, so never refused
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", true},
		{"GET", "/api/v1/watch/namespaces/ns/pods", true},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec", true},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", true},
		{"GET", "/api/v1/namespaces/ns/services/s/proxy/x", true},
		// health and metrics keep answering while the server drains
		{"GET", "/readyz", true},
		{"GET", "/livez/ping", true},
		{"GET", "/healthz", true},
		{"GET", "/metrics", true},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			wg := &server.SafeWaitGroup{}
			h := withInfo(WithWaitGroup(okHandler, wg))
			assert.Equal(t, http.StatusOK, serve(h, tc.method, tc.target).Code, "before Close")
			wg.Close()
			rec := serve(h, tc.method, tc.target)
			if tc.wantServed {
				assert.Equal(t, http.StatusOK, rec.Code)
				assert.Empty(t, rec.Header().Get("Retry-After"))
				return
			}
			requireRecStatus(t, rec, drainingStatus)
			assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		})
	}
}

// Requests the filter lets through uncounted must not hold up Wait.
func TestWithWaitGroupUncounted(t *testing.T) {
	cases := []struct {
		name, target string
		closeFirst   bool
	}{
		{"watch", "/api/v1/namespaces/ns/pods?watch=1", false},
		{"readyz after close", "/readyz", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wg := &server.SafeWaitGroup{}
			g := newGate(t)
			h := withInfo(WithWaitGroup(g, wg))
			if tc.closeFirst {
				wg.Close()
			}
			blocked := start(h, "GET", tc.target)
			recv(t, g.entered, "the request")
			recv(t, waitReturns(wg), "Wait, with only an uncounted request in flight")
			g.open()
			assert.Equal(t, http.StatusOK, recv(t, blocked, "the request").Code)
		})
	}
}
