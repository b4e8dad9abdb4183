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
		{name: "anonymous gets no system:authenticated", as: admin, headers: map[string][]string{"Impersonate-User": {user.Anonymous}},
			want: &user.User{Name: user.Anonymous}},
		{name: "not allowed for that user", as: admin, headers: map[string][]string{"Impersonate-User": {"root"}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`users "root" is forbidden: User "admin" cannot impersonate resource "users" in API group "" at the cluster scope`}},
		{name: "not allowed for that group", as: admin, headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {user.SystemPrivilegedGroup}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`groups "system:masters" is forbidden: User "admin" cannot impersonate resource "groups" in API group "" at the cluster scope`}},
		{name: "not allowed at all", as: &user.User{Name: "bob"}, headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:team:ci"}},
			status: &wantStatus{http.StatusForbidden, metav1.StatusReasonForbidden,
				`serviceaccounts "ci" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team"`}},
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
			h := withTestUser(WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = user.From(r.Context())
				leftover = r.Header.Clone()
			}), impersonators, discardLog), tc.as)
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
		withTestUser(WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := user.From(r.Context()); !ok {
				t.Fatal("no user")
			}
		}), impersonators, discardLog), admin).ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusForbidden && rec.Code != http.StatusBadRequest {
			t.Fatalf("code %d", rec.Code)
		}
	})
}
