package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/authz"
)

type authorizerFunc func(*user.User, *requestinfo.RequestInfo) (bool, string)

func (f authorizerFunc) Authorize(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	return f(u, info)
}

func denyAll(reason string) authz.Authorizer {
	return authorizerFunc(func(*user.User, *requestinfo.RequestInfo) (bool, string) { return false, reason })
}

// The 403 messages are kube's (responsewriters.Forbidden wrapped by apierrors.NewForbidden),
// byte for byte.
func TestWithAuthorizationDenies(t *testing.T) {
	bob := &user.User{Name: "bob", Groups: []string{user.AllAuthenticated}}
	cases := []struct {
		name           string
		method, target string
		user           *user.User
		reason         string
		message        string
		details        *metav1.StatusDetails
	}{
		{
			name: "namespaced, named", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			message: `pods "p" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns"`,
			details: &metav1.StatusDetails{Kind: "pods", Name: "p"},
		},
		{
			name: "namespaced collection", method: "GET", target: "/api/v1/namespaces/ns/pods",
			message: `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "ns"`,
			details: &metav1.StatusDetails{Kind: "pods"},
		},
		{
			name: "namespaced, grouped, subresource", method: "PUT", target: "/apis/apps/v1/namespaces/ns/deployments/d/scale",
			message: `deployments.apps "d" is forbidden: User "bob" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns"`,
			details: &metav1.StatusDetails{Group: "apps", Kind: "deployments", Name: "d"},
		},
		{
			name: "create in a namespace", method: "POST", target: "/apis/batch/v1/namespaces/ns/jobs",
			message: `jobs.batch is forbidden: User "bob" cannot create resource "jobs" in API group "batch" in the namespace "ns"`,
			details: &metav1.StatusDetails{Group: "batch", Kind: "jobs"},
		},
		{
			name: "watch across namespaces", method: "GET", target: "/api/v1/pods?watch=true",
			message: `pods is forbidden: User "bob" cannot watch resource "pods" in API group "" at the cluster scope`,
			details: &metav1.StatusDetails{Kind: "pods"},
		},
		{
			name: "cluster scope", method: "GET", target: "/api/v1/nodes",
			message: `nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope`,
			details: &metav1.StatusDetails{Kind: "nodes"},
		},
		{
			name: "cluster scope, named, grouped", method: "DELETE", target: "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin",
			message: `clusterroles.rbac.authorization.k8s.io "admin" is forbidden: User "bob" cannot delete resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`,
			details: &metav1.StatusDetails{Group: "rbac.authorization.k8s.io", Kind: "clusterroles", Name: "admin"},
		},
		{
			name: "a namespace", method: "GET", target: "/api/v1/namespaces/ns",
			message: `namespaces "ns" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "ns"`,
			details: &metav1.StatusDetails{Kind: "namespaces", Name: "ns"},
		},
		{
			name: "non-resource path", method: "GET", target: "/metrics",
			message: `forbidden: User "bob" cannot get path "/metrics"`,
			details: &metav1.StatusDetails{},
		},
		{
			name: "non-resource discovery path", method: "GET", target: "/apis/apps/v1",
			message: `forbidden: User "bob" cannot get path "/apis/apps/v1"`,
			details: &metav1.StatusDetails{},
		},
		{
			name: "anonymous", method: "GET", target: "/api/v1/namespaces/ns/secrets/s",
			user:    &user.User{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}},
			message: `secrets "s" is forbidden: User "system:anonymous" cannot get resource "secrets" in API group "" in the namespace "ns"`,
			details: &metav1.StatusDetails{Kind: "secrets", Name: "s"},
		},
		{
			name: "with the authorizer's reason", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			reason:  `RBAC: role.rbac.authorization.k8s.io "reader" not found`,
			message: `pods "p" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "reader" not found`,
			details: &metav1.StatusDetails{Kind: "pods", Name: "p"},
		},
		{
			name: "HTML is escaped, the reason is not", method: "GET", target: "/healthz",
			user: &user.User{Name: "<b>&co</b>"}, reason: "<why>",
			message: `forbidden: User "&lt;b&gt;&amp;co&lt;/b&gt;" cannot get path "/healthz": <why>`,
			details: &metav1.StatusDetails{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.user
			if u == nil {
				u = bob
			}
			called := false
			h := withInfo(withTestUser(WithAuthorization(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				called = true
			}), denyAll(tc.reason)), u))
			rec := serve(h, tc.method, tc.target)
			st := requireRecStatus(t, rec, wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden, tc.message})
			assert.Equal(t, tc.details, st.Details)
			assert.False(t, called)
		})
	}
}

func TestWithAuthorizationAllows(t *testing.T) {
	var gotUser *user.User
	var gotInfo *requestinfo.RequestInfo
	authorizer := authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
		gotUser, gotInfo = u, info
		return true, ""
	})
	alice := &user.User{Name: "alice"}
	h := withInfo(withTestUser(WithAuthorization(okHandler, authorizer), alice))
	rec := serve(h, "PATCH", "/apis/apps/v1/namespaces/ns/deployments/d")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Same(t, alice, gotUser)
	require.NotNil(t, gotInfo)
	assert.Equal(t, "patch", gotInfo.Verb)
	assert.Equal(t, "deployments", gotInfo.Resource)
	assert.Equal(t, "d", gotInfo.Name)

	rec = serve(withInfo(withTestUser(WithAuthorization(okHandler, authz.AlwaysAllow{}), alice)), "DELETE", "/api/v1/nodes/n")
	assert.Equal(t, http.StatusOK, rec.Code)
}

// Without a user or request info the chain is miswired; nothing gets through.
func TestWithAuthorizationMissingContext(t *testing.T) {
	cases := map[string]http.Handler{
		"no user":         withInfo(WithAuthorization(okHandler, authz.AlwaysAllow{})),
		"no request info": withTestUser(WithAuthorization(okHandler, authz.AlwaysAllow{}), &user.User{Name: "alice"}),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/pods", nil))
			requireRecStatus(t, rec, wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				"forbidden: no user or request info"})
		})
	}
}
