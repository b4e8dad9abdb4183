package filters

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/requestinfo"
)

func TestWithRequestInfo(t *testing.T) {
	cases := []struct {
		method, target string
		want           requestinfo.RequestInfo // Path and Parts are not compared
	}{
		{"GET", "/api/v1/namespaces/ns/pods", requestinfo.RequestInfo{IsResourceRequest: true, Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", requestinfo.RequestInfo{IsResourceRequest: true, Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", requestinfo.RequestInfo{IsResourceRequest: true, Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Subresource: "log", Name: "p"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create",
			APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments"}},
		{"DELETE", "/api/v1/nodes", requestinfo.RequestInfo{IsResourceRequest: true, Verb: "deletecollection",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes"}},
		{"GET", "/healthz", requestinfo.RequestInfo{Verb: "get"}},
		{"HEAD", "/version", requestinfo.RequestInfo{Verb: "head"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			var got *requestinfo.RequestInfo
			h := withInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = requestinfo.From(r.Context())
			}))
			rec := serve(h, tc.method, tc.target)
			assert.Equal(t, http.StatusOK, rec.Code)
			require.NotNil(t, got)
			got.Path, got.Parts = "", nil
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestWithRequestInfoUnresolvable(t *testing.T) {
	for _, target := range []string{"/api/v1/watch", "/apis/apps/v1/proxy/"} {
		t.Run(target, func(t *testing.T) {
			called := false
			h := withInfo(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
			rec := serve(h, "GET", target)
			requireRecStatus(t, rec, wantStatus{http.StatusBadRequest, metav1.StatusReasonBadRequest,
				"failed to create RequestInfo: unable to determine kind and namespace from url, " + target})
			assert.False(t, called)
		})
	}
}
