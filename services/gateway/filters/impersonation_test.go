package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// impersonators may impersonate anyone but the user "root" and the group "system:masters";
// everyone else nothing.
var impersonators = authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	if info.Verb != "impersonate" || u.Name != "admin" {
		return false, ""
	}
	return info.Name != "root" && info.Name != user.SystemPrivilegedGroup, ""
})

func TestWithImpersonation(t *testing.T) {
	admin := &user.User{Name: "admin", Groups: []string{"ops", user.AllAuthenticated}}
	cases := []struct {
		name    string
		as      *user.User
		headers map[string][]string
		want    *user.User
		status  *wantStatus
	}{
		{name: "no headers: the requester", as: admin, want: admin},
		{name: "a user gets system:authenticated", as: admin, headers: map[string][]string{"Impersonate-User": {"bob"}},
			want: &user.User{Name: "bob", Groups: []string{user.AllAuthenticated}}},
		{name: "given groups, and system:authenticated as kube adds it", as: admin,
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs", "qa"}, "Impersonate-Uid": {"42"}},
			want:    &user.User{Name: "bob", UID: "42", Groups: []string{"devs", "qa", "system:authenticated"}}},
		{name: "given system:unauthenticated stays unauthenticated", as: admin,
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:unauthenticated"}},
			want:    &user.User{Name: "bob", Groups: []string{"system:unauthenticated"}}},
		{name: "extras, keys unescaped and lower-cased", as: admin,
			headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Extra-Acme.com%2fproject": {"a", "b"}},
			want:    &user.User{Name: "bob", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{"acme.com/project": {"a", "b"}}}},
		{name: "a service account gets its groups", as: admin,
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:team:ci"}},
			want: &user.User{Name: "system:serviceaccount:team:ci",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated}}},
		{name: "anonymous gets system:unauthenticated", as: admin, headers: map[string][]string{"Impersonate-User": {user.Anonymous}},
			want: &user.User{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}},
		// Refused by every mode, the answer is the first mode's refusal, as kube 1.37 answers
		// (recorded: kubectl get pods --as=alice by a user without impersonation rights).
		{name: "not allowed for that user", as: admin, headers: map[string][]string{"Impersonate-User": {"root"}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`pods is forbidden: User "admin" cannot impersonate-on:user-info:list resource "pods" in API group "" at the cluster scope`}},
		{name: "not allowed for that group", as: admin, headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {user.SystemPrivilegedGroup}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`pods is forbidden: User "admin" cannot impersonate-on:user-info:list resource "pods" in API group "" at the cluster scope`}},
		{name: "not allowed at all", as: &user.User{Name: "bob"}, headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:team:ci"}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`pods is forbidden: User "bob" cannot impersonate-on:serviceaccount:list resource "pods" in API group "" at the cluster scope`}},
		{name: "groups without a user: kube's 400, recorded from kube-apiserver", as: admin, headers: map[string][]string{"Impersonate-Group": {"devs"}},
			status: &wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest,
				`requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"devs"}, Extra:map[string][]string(nil)} without impersonating a user name`}},
		{name: "a UID and extras without a user", as: admin, headers: map[string][]string{"Impersonate-Uid": {"42"}, "Impersonate-Extra-Acme.com%2fp": {"v"}},
			status: &wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest,
				`requested &user.DefaultInfo{Name:"", UID:"42", Groups:[]string(nil), Extra:map[string][]string{"acme.com/p":[]string{"v"}}} without impersonating a user name`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *user.User
			var leftover http.Header
			h := withTestUser(WithRequestInfo(WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = user.From(r.Context())
				leftover = r.Header.Clone()
			}), impersonators, discardLog), requestinfo.NewResolver()), tc.as)
			req := httptest.NewRequest("GET", "/api/v1/pods", nil)
			for k, vs := range tc.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.status != nil {
				requireRecStatus(t, rec, *tc.status)
				assert.Nil(t, got)
				return
			}
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.Equal(t, tc.want, got)
			for k := range leftover {
				assert.NotContains(t, k, "Impersonate", "impersonation headers do not travel on")
			}
		})
	}
}

// carol may act as alice only to list pods (constrained impersonation); root may do anything.
var constrained = authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	switch u.Name {
	case "root":
		return true, ""
	case "carol":
		return info.Verb == "impersonate:user-info" && info.APIGroup == "authentication.k8s.io" && info.Resource == "users" && info.Name == "alice" ||
			info.Verb == "impersonate-on:user-info:list" && info.Resource == "pods", ""
	}
	return false, ""
})

func TestConstrainedImpersonation(t *testing.T) {
	run := func(as *user.User, method, path string, headers map[string]string) (*httptest.ResponseRecorder, *user.User) {
		var got *user.User
		h := withTestUser(WithRequestInfo(WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, _ = user.From(r.Context())
		}), constrained, discardLog), requestinfo.NewResolver()), as)
		req := httptest.NewRequest(method, path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec, got
	}
	carol, root := &user.User{Name: "carol"}, &user.User{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	asAlice := map[string]string{"Impersonate-User": "alice"}
	rec, got := run(carol, "GET", "/api/v1/namespaces/a/pods", asAlice)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, &user.User{Name: "alice", Groups: []string{user.AllAuthenticated}}, got)

	rec, _ = run(carol, "GET", "/api/v1/namespaces/a/pods/p", asAlice)
	requireRecStatus(t, rec, wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
		`pods "p" is forbidden: User "carol" cannot impersonate-on:user-info:get resource "pods" in API group "" in the namespace "a"`})
	rec, _ = run(carol, "GET", "/api/v1/namespaces/a/pods", map[string]string{"Impersonate-User": "bob"})
	requireRecStatus(t, rec, wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
		`users.authentication.k8s.io "bob" is forbidden: User "carol" cannot impersonate:user-info resource "users" in API group "authentication.k8s.io" at the cluster scope`})

	// Constrained impersonation never grants system:masters; legacy "impersonate" still may.
	rec, got = run(root, "GET", "/api/v1/pods", map[string]string{"Impersonate-User": "x", "Impersonate-Group": user.SystemPrivilegedGroup})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, []string{user.SystemPrivilegedGroup, user.AllAuthenticated}, got.Groups)
	// A node is impersonated with the nodes' group.
	rec, got = run(root, "GET", "/api/v1/pods", map[string]string{"Impersonate-User": "system:node:n1"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, []string{"system:nodes", user.AllAuthenticated}, got.Groups)
}

// FuzzImpersonationHeaders: any headers give a user, a kube Status, or pass through; never a
// panic.
func FuzzImpersonationHeaders(f *testing.F) {
	f.Add("bob", "devs", "42", "Acme.com%2fp", "v")
	f.Add("system:serviceaccount:ns:sa", "", "", "", "")
	f.Add("system:serviceaccount::", "g", "", "%zz", "")
	f.Add("", "g", "", "", "")
	f.Fuzz(func(t *testing.T, name, group, uid, extraKey, extraValue string) {
		req := httptest.NewRequest("GET", "/api", nil)
		set := func(k, v string) {
			if v != "" {
				req.Header[k] = []string{v}
			}
		}
		set("Impersonate-User", name)
		set("Impersonate-Group", group)
		set("Impersonate-Uid", uid)
		set("Impersonate-Extra-"+extraKey, extraValue)
		rec := httptest.NewRecorder()
		admin := &user.User{Name: "admin"}
		withTestUser(WithRequestInfo(WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := user.From(r.Context()); !ok {
				t.Fatal("no user")
			}
		}), impersonators, discardLog), requestinfo.NewResolver()), admin).ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusForbidden && rec.Code != http.StatusBadRequest {
			t.Fatalf("code %d", rec.Code)
		}
	})
}
