package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
)

var tooManyStatus = wantStatus{http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
	"Too many requests, please try again later."}

type reqSpec struct{ method, target string }

var (
	listPods   = reqSpec{"GET", "/api/v1/namespaces/ns/pods"}
	getPod     = reqSpec{"GET", "/api/v1/namespaces/ns/pods/p"}
	healthz    = reqSpec{"GET", "/healthz"}
	createPod  = reqSpec{"POST", "/api/v1/namespaces/ns/pods"}
	deletePod  = reqSpec{"DELETE", "/api/v1/namespaces/ns/pods/p"}
	postNonRes = reqSpec{"POST", "/some/path"}
	watchPods  = reqSpec{"GET", "/api/v1/namespaces/ns/pods?watch=true"}
	execPod    = reqSpec{"POST", "/api/v1/namespaces/ns/pods/p/exec"}
)

// TestWithMaxInFlightLimit fills one class's slots with requests held in the handler, then
// checks which further requests still get through.
func TestWithMaxInFlightLimit(t *testing.T) {
	cases := []struct {
		name               string
		readOnly, mutating int
		fill               []reqSpec // held in the handler
		user               *user.User
		allowed, rejected  []reqSpec // tried while the fill is held
	}{
		{
			name: "read-only full", readOnly: 2, mutating: 1,
			fill:     []reqSpec{listPods, getPod},
			allowed:  []reqSpec{createPod, watchPods, execPod},
			rejected: []reqSpec{listPods, getPod, healthz},
		},
		{
			name: "mutating full", readOnly: 1, mutating: 2,
			fill:     []reqSpec{createPod, deletePod},
			allowed:  []reqSpec{listPods, watchPods, execPod},
			rejected: []reqSpec{createPod, postNonRes},
		},
		{
			name: "non-resource GET is read-only", readOnly: 1, mutating: 1,
			fill:     []reqSpec{healthz},
			allowed:  []reqSpec{createPod},
			rejected: []reqSpec{listPods},
		},
		{
			name: "watches and exec take no slot", readOnly: 1, mutating: 1,
			fill:    []reqSpec{watchPods, watchPods, execPod, execPod},
			allowed: []reqSpec{listPods, createPod},
		},
		{
			name: "0 disables a class", readOnly: 0, mutating: 1,
			fill:     []reqSpec{listPods, listPods, listPods, createPod},
			allowed:  []reqSpec{listPods},
			rejected: []reqSpec{createPod},
		},
		{
			name: "system:masters is never limited", readOnly: 1, mutating: 1,
			user:    &user.User{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
			fill:    []reqSpec{listPods, createPod},
			allowed: []reqSpec{listPods, createPod},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t)
			// Requests with ?hold go to the gate; the others answer at once.
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("hold") {
					g.ServeHTTP(w, r)
					return
				}
				okHandler(w, r)
			})
			u := tc.user
			if u == nil {
				u = &user.User{Name: "alice", Groups: []string{user.AllAuthenticated}}
			}
			h := withInfo(withTestUser(WithMaxInFlightLimit(inner, tc.readOnly, tc.mutating), u))

			var held []<-chan *httptest.ResponseRecorder
			for _, f := range tc.fill {
				held = append(held, start(h, f.method, withQuery(f.target, "hold")))
				recv(t, g.entered, "a held request")
			}
			for _, a := range tc.allowed {
				rec := serve(h, a.method, a.target)
				assert.Equal(t, http.StatusOK, rec.Code, "%s %s: %s", a.method, a.target, rec.Body.String())
			}
			for _, r := range tc.rejected {
				rec := serve(h, r.method, r.target)
				requireRecStatus(t, rec, tooManyStatus)
				assert.Equal(t, "1", rec.Header().Get("Retry-After"))
			}

			// Once the held requests finish, their slots are free again.
			g.open()
			for _, ch := range held {
				assert.Equal(t, http.StatusOK, recv(t, ch, "a held request").Code)
			}
			for _, r := range tc.rejected {
				assert.Equal(t, http.StatusOK, serve(h, r.method, r.target).Code, "%s %s after release", r.method, r.target)
			}
		})
	}
}

// An N+1th request, while N handlers hold the N slots, is turned away at once.
func TestWithMaxInFlightLimitBurst(t *testing.T) {
	const n = 5
	g := newGate(t)
	h := withInfo(WithMaxInFlightLimit(g, n, n))
	var held []<-chan *httptest.ResponseRecorder
	for range n {
		held = append(held, start(h, "GET", "/api/v1/namespaces/ns/configmaps"))
	}
	for range n {
		recv(t, g.entered, "a held request")
	}
	rec := serve(h, "GET", "/api/v1/namespaces/ns/configmaps")
	requireRecStatus(t, rec, tooManyStatus)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	g.open()
	for _, ch := range held {
		assert.Equal(t, http.StatusOK, recv(t, ch, "a held request").Code)
	}
}

func withQuery(target, q string) string {
	if strings.Contains(target, "?") {
		return target + "&" + q
	}
	return target + "?" + q
}

func TestIsLongRunning(t *testing.T) {
	cases := []struct {
		method, target string
		grpc           bool
		noInfo         bool
		want           bool
	}{
		{method: "GET", target: "/api/v1/namespaces/ns/pods", want: false},
		{method: "GET", target: "/api/v1/namespaces/ns/pods/p", want: false},
		{method: "GET", target: "/api/v1/namespaces/ns/pods/p/status", want: false},
		{method: "GET", target: "/api/v1/namespaces/ns/pods?watch=true", want: true},
		{method: "GET", target: "/api/v1/watch/pods", want: true},
		{method: "GET", target: "/api/v1/proxy/nodes/n/stats", want: true},
		{method: "POST", target: "/api/v1/namespaces/ns/pods/p/exec", want: true},
		{method: "POST", target: "/api/v1/namespaces/ns/pods/p/attach", want: true},
		{method: "POST", target: "/api/v1/namespaces/ns/pods/p/portforward", want: true},
		{method: "GET", target: "/api/v1/namespaces/ns/pods/p/log", want: true},
		{method: "GET", target: "/api/v1/nodes/n/proxy/metrics", want: true},
		{method: "GET", target: "/logs/exec", want: false}, // non-resource: no subresource
		{method: "GET", target: "/api/v1/namespaces/ns/pods?watch=true", noInfo: true, want: false},
		{method: "POST", target: "/apichain.resource.v1.ResourceService/Watch", grpc: true, noInfo: true, want: true},
		{method: "POST", target: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", grpc: true, want: true},
		{method: "POST", target: "/apichain.resource.v1.ResourceService/Get", grpc: true, want: false},
		{method: "POST", target: "/apichain.resource.v1.ResourceService/Create", grpc: true, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.grpc {
				r.ProtoMajor = 2
				r.Header.Set("Content-Type", "application/grpc+proto")
			}
			if !tc.noInfo {
				info, err := requestinfo.NewResolver().Resolve(r)
				if err != nil {
					t.Fatal(err)
				}
				r = r.WithContext(requestinfo.WithRequestInfo(context.Background(), info))
			}
			assert.Equal(t, tc.want, IsLongRunning(r))
		})
	}
}

func TestIsGRPC(t *testing.T) {
	r := httptest.NewRequest("POST", "/x", nil)
	r.Header.Set("Content-Type", "application/grpc")
	assert.False(t, IsGRPC(r), "HTTP/1 is never gRPC")
	r.ProtoMajor = 2
	assert.True(t, IsGRPC(r))
	r.Header.Set("Content-Type", "application/json")
	assert.False(t, IsGRPC(r))
}
