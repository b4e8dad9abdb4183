package filters

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/user"
)

// TestMain fails the package if any test leaves a goroutine behind, e.g. a handler the
// timeout filter abandoned and nobody released (the timeout filter's idle workers are meant
// to stay; one still running a handler is not idle).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/apichain/apichain/services/gateway/filters.handlerWorker"))
}

// ---- helpers shared by every test file of the package ----

// waitLimit bounds every wait on a channel, so a broken filter fails a test instead of
// hanging it. Nothing ever sleeps for it.
const waitLimit = 10 * time.Second

var discardLog = slog.New(slog.DiscardHandler)

// withInfo resolves request info the way the chain does, for filters that need it.
func withInfo(h http.Handler) http.Handler {
	return WithRequestInfo(h, requestinfo.NewResolver())
}

// withTestUser puts u in the context, standing in for authentication.
func withTestUser(h http.Handler, u *user.User) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), u)))
	})
}

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "ok")
})

// serve runs one request through h and returns the recorder.
func serve(h http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// wantStatus is the expected kube Status of a failed request; an empty Message is not checked.
type wantStatus struct {
	Code    int
	Reason  metav1.StatusReason
	Message string
}

// requireStatus checks that a response is the kube Status JSON described by want.
func requireStatus(t *testing.T, code int, header http.Header, body []byte, want wantStatus) metav1.Status {
	t.Helper()
	require.Equal(t, want.Code, code, "status code; body: %s", body)
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	assert.Equal(t, "nosniff", header.Get("X-Content-Type-Options"))
	var st metav1.Status
	require.NoError(t, json.Unmarshal(body, &st), "body: %s", body)
	assert.Equal(t, "Status", st.Kind)
	assert.Equal(t, "v1", st.APIVersion)
	assert.Equal(t, metav1.StatusFailure, st.Status)
	assert.Equal(t, want.Reason, st.Reason)
	assert.EqualValues(t, want.Code, st.Code)
	if want.Message != "" {
		assert.Equal(t, want.Message, st.Message)
	}
	return st
}

// requireRecStatus is requireStatus for a recorder.
func requireRecStatus(t *testing.T, rec *httptest.ResponseRecorder, want wantStatus) metav1.Status {
	t.Helper()
	return requireStatus(t, rec.Code, rec.Header(), rec.Body.Bytes(), want)
}

// recv waits for ch to deliver or close.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// gate is a handler that holds every request until opened, announcing each arrival.
type gate struct {
	entered chan string // the path of each request that got in
	release chan struct{}
	once    sync.Once
}

// newGate returns a gate that opens at the latest when the test ends.
func newGate(t *testing.T) *gate {
	g := &gate{entered: make(chan string, 64), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.entered <- r.URL.Path
	<-g.release
	_, _ = io.WriteString(w, "ok")
}

// start serves one request in a goroutine; the channel delivers its recorder.
func start(h http.Handler, method, target string) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- serve(h, method, target) }()
	return done
}

// ---- the chain ----

// chainFixture is a full chain over a final handler that records what it saw.
type chainFixture struct {
	h        http.Handler
	wg       *server.SafeWaitGroup
	retry    chan struct{}
	release  chan struct{} // closes to let /slow requests finish
	seen     chan seenRequest
	released bool
	metrics  *prometheus.Registry
}

type seenRequest struct {
	info        *requestinfo.RequestInfo
	user        *user.User
	auditID     string
	authz       string
	hasDeadline bool
}

const chainTokens = "tok-alice,alice,uid-alice,\"dev\"\ntok-bob,bob,uid-bob\n"

func newChain(t *testing.T) *chainFixture {
	t.Helper()
	tf, err := authn.ParseTokenFile(strings.NewReader(chainTokens))
	require.NoError(t, err)
	f := &chainFixture{
		wg:      &server.SafeWaitGroup{},
		retry:   make(chan struct{}),
		release: make(chan struct{}),
		seen:    make(chan seenRequest, 16),
		metrics: prometheus.NewRegistry(),
	}
	t.Cleanup(f.unblock)
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := requestinfo.From(r.Context())
		u, _ := user.From(r.Context())
		_, dl := r.Context().Deadline()
		f.seen <- seenRequest{info: info, user: u, auditID: audit.IDFrom(r.Context()),
			authz: r.Header.Get("Authorization"), hasDeadline: dl}
		switch info.Name {
		case "boom":
			panic("boom")
		case "slow":
			<-f.release
		}
		_, _ = io.WriteString(w, "ok")
	})
	// bob and anonymous may do nothing but non-resource requests; everyone else anything.
	authorizer := authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
		return (u.Name != "bob" && u.Name != user.Anonymous) || !info.IsResourceRequest, ""
	})
	f.h = BuildHandlerChain(final, ChainConfig{
		Log:                         discardLog,
		RequestTimeout:              time.Hour,
		MaxRequestsInFlight:         10,
		MaxMutatingRequestsInFlight: 10,
		Authentication: authn.Authentication{
			Authenticators: []authn.Authenticator{authn.NewBearer(nil, tf), authn.X509Authenticator(clientCAs())},
			Anonymous:      true,
		},
		Authorizer:     authorizer,
		HSTSDirectives: "max-age=31536000",
		InFlight:       f.wg,
		RetryAfter:     f.retry,
		Metrics:        NewRequestMetrics(f.metrics),
	})
	return f
}

// requests is apiserver_request_total summed over the series with this code and verb.
func (f *chainFixture) requests(t *testing.T, code, verb string) float64 {
	t.Helper()
	families, err := f.metrics.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range families {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["code"] == code && labels["verb"] == verb {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func (f *chainFixture) unblock() {
	if !f.released {
		f.released = true
		close(f.release)
	}
}

func (f *chainFixture) do(method, target, token, auditID string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if auditID != "" {
		req.Header.Set(audit.IDHeader, auditID)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// requireOuterHeaders checks what the outer filters add to every answer, even errors.
func requireOuterHeaders(t *testing.T, rec *httptest.ResponseRecorder, auditID string) {
	t.Helper()
	assert.Equal(t, auditID, rec.Header().Get(audit.IDHeader))
	assert.Equal(t, "no-cache, private", rec.Header().Get("Cache-Control"))
	assert.Equal(t, "max-age=31536000", rec.Header().Get("Strict-Transport-Security"))
}

func TestChainPanicBehindAuthorizationGetsAuditIDAnd500(t *testing.T) {
	f := newChain(t)
	rec := f.do("GET", "/api/v1/namespaces/ns/pods/boom", "tok-alice", "audit-1")
	// The panic passed authentication, authorization and the timeout filter's goroutine,
	// and still reached panic recovery, which is inside the audit ID filter.
	requireRecStatus(t, rec, wantStatus{http.StatusInternalServerError, metav1.StatusReasonInternalError,
		"This request caused apiserver to panic. Look in the logs for details."})
	requireOuterHeaders(t, rec, "audit-1")
	seen := recv(t, f.seen, "final handler")
	assert.Equal(t, "alice", seen.user.Name)
	assert.Equal(t, 1.0, f.requests(t, "500", "GET"), "the panic is counted as the 500 it became")

	// The chain keeps serving.
	rec = f.do("GET", "/api/v1/namespaces/ns/pods/p", "tok-alice", "audit-2")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "ok", rec.Body.String())
	requireOuterHeaders(t, rec, "audit-2")
}

func TestChainFinalHandlerSeesRequestInfoUserAndAuditID(t *testing.T) {
	f := newChain(t)
	rec := f.do("GET", "/apis/apps/v1/namespaces/ns/deployments?labelSelector=a%3Db", "tok-alice", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	seen := recv(t, f.seen, "final handler")

	require.NotNil(t, seen.info)
	assert.True(t, seen.info.IsResourceRequest)
	assert.Equal(t, "list", seen.info.Verb)
	assert.Equal(t, "apps", seen.info.APIGroup)
	assert.Equal(t, "v1", seen.info.APIVersion)
	assert.Equal(t, "ns", seen.info.Namespace)
	assert.Equal(t, "deployments", seen.info.Resource)
	assert.Equal(t, "a=b", seen.info.LabelSelector)

	require.NotNil(t, seen.user)
	assert.Equal(t, "alice", seen.user.Name)
	assert.Equal(t, []string{"dev", user.AllAuthenticated}, seen.user.Groups)
	assert.Empty(t, seen.authz, "Authorization must be stripped before the handler")
	assert.True(t, seen.hasDeadline, "non-long-running requests get a deadline")

	assert.NotEmpty(t, seen.auditID)
	assert.Equal(t, seen.auditID, rec.Header().Get(audit.IDHeader))
}

func TestChainWatchHasNoDeadline(t *testing.T) {
	f := newChain(t)
	rec := f.do("GET", "/api/v1/namespaces/ns/pods?watch=true", "tok-alice", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	seen := recv(t, f.seen, "final handler")
	assert.Equal(t, "watch", seen.info.Verb)
	assert.False(t, seen.hasDeadline)
}

func TestChainRejections(t *testing.T) {
	cases := []struct {
		name   string
		method string
		target string
		token  string
		setup  func(*chainFixture)
		want   wantStatus
		header map[string]string
		// rejected by a filter outside the cache-control and HSTS filters
		beforeHeaders bool
	}{
		{
			name: "no credentials: anonymous, then the authorizer", method: "GET", target: "/api/v1/namespaces/ns/pods",
			want: wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "ns"`},
		},
		{
			name: "bad token", method: "GET", target: "/readyz", token: "nope",
			want: wantStatus{http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized"},
		},
		{
			name: "forbidden", method: "DELETE", target: "/api/v1/namespaces/ns/secrets/s", token: "tok-bob",
			want: wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`secrets "s" is forbidden: User "bob" cannot delete resource "secrets" in API group "" in the namespace "ns"`},
		},
		{
			// The deadline filter is outside authentication: a bad timeout is 400 even
			// without credentials.
			name: "bad timeout before authentication", method: "GET", target: "/api/v1/pods?timeout=soon",
			want: wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest,
				`invalid timeout specified in the request URL - time: invalid duration "soon"`},
		},
		{
			name: "unresolvable request info", method: "GET", target: "/api/v1/watch", token: "tok-alice",
			want: wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest,
				"failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch"},
			beforeHeaders: true,
		},
		{
			name: "draining", method: "POST", target: "/api/v1/namespaces/ns/pods", token: "tok-alice",
			setup:  func(f *chainFixture) { f.wg.Close() },
			want:   wantStatus{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "apiserver is shutting down"},
			header: map[string]string{"Retry-After": "1"},
		},
		{
			name: "shutting down", method: "GET", target: "/api/v1/namespaces/ns/pods", token: "tok-alice",
			setup: func(f *chainFixture) { close(f.retry) },
			want: wantStatus{http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				"The apiserver is shutting down, please try again later."},
			header:        map[string]string{"Retry-After": "5", "Connection": "close"},
			beforeHeaders: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newChain(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			rec := f.do(tc.method, tc.target, tc.token, "id-"+tc.name)
			requireRecStatus(t, rec, tc.want)
			if tc.beforeHeaders {
				assert.Equal(t, "id-"+tc.name, rec.Header().Get(audit.IDHeader))
				assert.Empty(t, rec.Header().Get("Cache-Control"))
				assert.Empty(t, rec.Header().Get("Strict-Transport-Security"))
			} else {
				requireOuterHeaders(t, rec, "id-"+tc.name)
			}
			for k, v := range tc.header {
				assert.Equal(t, v, rec.Header().Get(k), k)
			}
			assert.Empty(t, f.seen, "the final handler must not run")
			if tc.name != "unresolvable request info" { // rejected before the metrics filter can label it
				verb := map[string]string{"GET": "LIST", "POST": "POST", "DELETE": "DELETE"}[tc.method]
				if !strings.HasPrefix(tc.target, "/api") {
					verb = tc.method
				}
				assert.Equal(t, 1.0, f.requests(t, strconv.Itoa(tc.want.Code), verb), "a rejected request is counted")
			}
		})
	}
}

func TestChainHealthDuringShutdown(t *testing.T) {
	f := newChain(t)
	close(f.retry)
	f.wg.Close()
	rec := f.do("GET", "/readyz", "", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	seen := recv(t, f.seen, "final handler")
	assert.Equal(t, user.Anonymous, seen.user.Name)
}

func TestChainHandlerTimeout(t *testing.T) {
	f := newChain(t)
	// The client asks for less than the server's hour, and the handler outlives it.
	rec := f.do("GET", "/api/v1/namespaces/ns/pods/slow?timeout=20ms", "tok-alice", "audit-slow")
	requireRecStatus(t, rec, wantStatus{http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
		"Timeout: request did not complete within requested timeout - context deadline exceeded"})
	requireOuterHeaders(t, rec, "audit-slow")
	recv(t, f.seen, "final handler")
	f.unblock() // the abandoned handler returns; goleak checks it did
}

// TestChainOverTheWire runs the chain in a real server: a panic answers 500 and the same
// server (and client) carries on.
func TestChainOverTheWire(t *testing.T) {
	f := newChain(t)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	get := func(path string) (*http.Response, []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok-alice")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, body
	}

	resp, body := get("/api/v1/namespaces/ns/pods/boom")
	requireStatus(t, resp.StatusCode, resp.Header, body, wantStatus{http.StatusInternalServerError,
		metav1.StatusReasonInternalError, "This request caused apiserver to panic. Look in the logs for details."})
	assert.NotEmpty(t, resp.Header.Get(audit.IDHeader))

	resp, body = get("/api/v1/namespaces/ns/pods/p")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))
}
