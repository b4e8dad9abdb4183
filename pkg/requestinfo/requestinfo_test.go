package requestinfo

import "testing"

// Cases from kube's TestGetAPIRequestInfo, with full expected values.
func TestResolveKubeResourceCases(t *testing.T) {
	runCases(t, []resolveCase{
		// resource paths
		{"list namespaces", "GET", "/api/v1/namespaces", res("list", "api", "", "v1", "", "namespaces", "", "", "namespaces"), false},
		{"get namespace", "GET", "/api/v1/namespaces/other", res("get", "api", "", "v1", "other", "namespaces", "", "other", "namespaces", "other"), false},
		{"list pods in ns", "GET", "/api/v1/namespaces/other/pods", res("list", "api", "", "v1", "other", "pods", "", "", "pods"), false},
		{"get pod", "GET", "/api/v1/namespaces/other/pods/foo", res("get", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo"), false},
		{"head pod", "HEAD", "/api/v1/namespaces/other/pods/foo", res("get", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo"), false},
		{"list all pods", "GET", "/api/v1/pods", res("list", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"head all pods", "HEAD", "/api/v1/pods", res("list", "api", "", "v1", "", "pods", "", "", "pods"), false},

		// special verbs
		{"proxy", "GET", "/api/v1/proxy/namespaces/other/pods/foo", res("proxy", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo"), false},
		{"proxy has no subresource", "GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
			res("proxy", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo", "subpath", "not", "a", "subresource"), false},
		{"watch prefix", "GET", "/api/v1/watch/pods", res("watch", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"watch=true", "GET", "/api/v1/pods?watch=true", res("watch", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"watch=false", "GET", "/api/v1/pods?watch=false", res("list", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"watch prefix in ns", "GET", "/api/v1/watch/namespaces/other/pods", res("watch", "api", "", "v1", "other", "pods", "", "", "pods"), false},
		{"watch=1", "GET", "/api/v1/namespaces/other/pods?watch=1", res("watch", "api", "", "v1", "other", "pods", "", "", "pods"), false},
		{"watch=0", "GET", "/api/v1/namespaces/other/pods?watch=0", res("list", "api", "", "v1", "other", "pods", "", "", "pods"), false},

		// subresource identification
		{"pod status", "GET", "/api/v1/namespaces/other/pods/foo/status", res("get", "api", "", "v1", "other", "pods", "status", "foo", "pods", "foo", "status"), false},
		{"pod proxy subresource", "GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", res("get", "api", "", "v1", "other", "pods", "proxy", "foo", "pods", "foo", "proxy", "subpath"), false},
		{"namespace finalize", "PUT", "/api/v1/namespaces/other/finalize", res("update", "api", "", "v1", "other", "namespaces", "finalize", "other", "namespaces", "other", "finalize"), false},
		{"namespace status", "PUT", "/api/v1/namespaces/other/status", res("update", "api", "", "v1", "other", "namespaces", "status", "other", "namespaces", "other", "status"), false},

		// verb identification
		{"patch", "PATCH", "/api/v1/namespaces/other/pods/foo", res("patch", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo"), false},
		{"delete", "DELETE", "/api/v1/namespaces/other/pods/foo", res("delete", "api", "", "v1", "other", "pods", "", "foo", "pods", "foo"), false},
		{"create", "POST", "/api/v1/namespaces/other/pods", res("create", "api", "", "v1", "other", "pods", "", "", "pods"), false},

		// deletecollection
		{"deletecollection nodes", "DELETE", "/api/v1/nodes", res("deletecollection", "api", "", "v1", "", "nodes", "", "", "nodes"), false},
		{"deletecollection namespaces", "DELETE", "/api/v1/namespaces", res("deletecollection", "api", "", "v1", "", "namespaces", "", "", "namespaces"), false},
		{"deletecollection pods", "DELETE", "/api/v1/namespaces/other/pods", res("deletecollection", "api", "", "v1", "other", "pods", "", "", "pods"), false},
		{"deletecollection grouped", "DELETE", "/apis/extensions/v1/namespaces/other/pods", res("deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", "pods"), false},

		// group and version identification
		{"group", "POST", "/apis/extensions/v1/namespaces/other/pods", res("create", "apis", "extensions", "v1", "other", "pods", "", "", "pods"), false},
		{"version", "POST", "/apis/extensions/v1beta3/namespaces/other/pods", res("create", "apis", "extensions", "v1beta3", "other", "pods", "", "", "pods"), false},
	})
}

// Cases from kube's TestGetNonAPIRequestInfo and its error cases, plus
// discovery paths.
func TestResolveNonResource(t *testing.T) {
	apis := func(verb string) RequestInfo { i := nonRes(verb); i.APIPrefix = "apis"; return i }
	runCases(t, []resolveCase{
		{"root", "GET", "/", nonRes("get"), false},
		{"healthz", "GET", "/healthz", nonRes("get"), false},
		{"version", "GET", "/version", nonRes("get"), false},
		{"readyz post", "POST", "/readyz/etcd", nonRes("post"), false},
		{"api", "GET", "/api", nonRes("get"), false},
		{"api version", "GET", "/api/v1", nonRes("get"), false},
		{"api version slash", "GET", "/api/version/", nonRes("get"), false},
		{"apis", "GET", "/apis", nonRes("get"), false},
		{"apis group", "GET", "/apis/batch", nonRes("get"), false},
		// kube records the prefix before noticing the path is too short.
		{"apis group version", "GET", "/apis/extensions/v1beta1", apis("get"), false},
		{"apis group version slash", "GET", "/apis/group/version/", apis("get"), false},
		{"missing api group", "GET", "/apis/version/resource", apis("get"), false},
		{"bad prefix", "GET", "/badprefix/version/resource", nonRes("get"), false},
		{"not-api root", "GET", "/not-api/version/resource", nonRes("get"), false},
		{"openapi", "GET", "/openapi/v3/apis/apps/v1", nonRes("get"), false},
		{"unknown method", "OPTIONS", "/healthz", nonRes("options"), false},
	})
}

// kube's TestGetNonAPIRequestInfo positives: just IsResourceRequest.
func TestResolveResourcePositives(t *testing.T) {
	runCases(t, []resolveCase{
		{"simple groupless", "GET", "/api/version/resource", res("list", "api", "", "version", "", "resource", "", "", "resource"), false},
		{"simple group", "GET", "/apis/group/version/resource/name/subresource",
			res("get", "apis", "group", "version", "", "resource", "subresource", "name", "resource", "name", "subresource"), false},
		{"more steps", "GET", "/api/version/resource/name/subresource",
			res("get", "api", "", "version", "", "resource", "subresource", "name", "resource", "name", "subresource"), false},
		{"group list", "GET", "/apis/batch/v1/job", res("list", "apis", "batch", "v1", "", "job", "", "", "job"), false},
		{"group get", "GET", "/apis/batch/v1/job/foo", res("get", "apis", "batch", "v1", "", "job", "", "foo", "job", "foo"), false},
		{"group subresource", "GET", "/apis/batch/v1/job/foo/scale", res("get", "apis", "batch", "v1", "", "job", "scale", "foo", "job", "foo", "scale"), false},
	})
}
