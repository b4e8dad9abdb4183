package requestinfo

import (
	"net/http"
	"net/url"
	"testing"
)

// Path shapes and methods where kube's behaviour is easy to get wrong.
func TestResolvePathQuirks(t *testing.T) {
	watchErr := res("get", "api", "", "v1", "", "", "", "")
	watchErr.Parts = nil
	proxyErr := watchErr
	proxyErr.Verb = "delete"
	groupedWatchErr := watchErr
	groupedWatchErr.APIPrefix, groupedWatchErr.APIGroup = "apis", "apps"
	runCases(t, []resolveCase{
		// namespaces/{ns}/{x}: x is a namespace subresource only if status or finalize
		{"ns status with tail", "GET", "/api/v1/namespaces/x/status/extra", res("get", "api", "", "v1", "x", "namespaces", "status", "x", "namespaces", "x", "status", "extra"), false},
		{"configmap status", "GET", "/api/v1/namespaces/x/configmaps/y/status", res("get", "api", "", "v1", "x", "configmaps", "status", "y", "configmaps", "y", "status"), false},
		{"resource named status-like", "GET", "/api/v1/namespaces/x/statuses", res("list", "api", "", "v1", "x", "statuses", "", "", "statuses"), false},
		{"grouped ns resource", "PUT", "/apis/apps/v1/namespaces/x/deployments/d/scale", res("update", "apis", "apps", "v1", "x", "deployments", "scale", "d", "deployments", "d", "scale"), false},
		{"watch namespaces list", "GET", "/api/v1/watch/namespaces", res("watch", "api", "", "v1", "", "namespaces", "", "", "namespaces"), false},
		{"watch one namespace", "GET", "/api/v1/watch/namespaces/x", res("watch", "api", "", "v1", "x", "namespaces", "", "x", "namespaces", "x"), false},
		{"watch prefix grouped item", "GET", "/apis/apps/v1/watch/namespaces/x/deployments/d", res("watch", "apis", "apps", "v1", "x", "deployments", "", "d", "deployments", "d"), false},
		{"watch prefix keeps subresource", "GET", "/api/v1/watch/pods/p/status", res("watch", "api", "", "v1", "", "pods", "status", "p", "pods", "p", "status"), false},
		{"watch prefix ignores method", "POST", "/api/v1/watch/pods", res("watch", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"proxy without ns", "GET", "/api/v1/proxy/nodes/n1/stats", res("proxy", "api", "", "v1", "", "nodes", "", "n1", "nodes", "n1", "stats"), false},
		{"proxy collection", "DELETE", "/api/v1/proxy/pods", res("proxy", "api", "", "v1", "", "pods", "", "", "pods"), false},

		// a path verb with nothing after it: error, info as far as known
		{"bare watch", "GET", "/api/v1/watch", watchErr, true},
		{"bare watch slash", "GET", "/api/v1/watch/", watchErr, true},
		{"bare proxy", "DELETE", "/api/v1/proxy", proxyErr, true},
		{"bare grouped watch", "GET", "/apis/apps/v1/watch", groupedWatchErr, true},

		// slashes: only leading/trailing ones are dropped
		{"trailing slash", "GET", "/api/v1/pods/", res("list", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"extra outer slashes", "GET", "//api/v1/pods/foo//", res("get", "api", "", "v1", "", "pods", "", "foo", "pods", "foo"), false},
		{"empty version", "GET", "/api//pods", res("list", "api", "", "", "", "pods", "", "", "pods"), false},
		{"empty resource", "GET", "/api/v1//foo", res("get", "api", "", "v1", "", "", "", "foo", "", "foo"), false},
		{"empty name is a list", "GET", "/api/v1/pods//status", res("list", "api", "", "v1", "", "pods", "status", "", "pods", "", "status"), false},
		{"empty name delete", "DELETE", "/api/v1/pods//x", res("deletecollection", "api", "", "v1", "", "pods", "x", "", "pods", "", "x"), false},
		{"empty namespace", "GET", "/api/v1/namespaces//pods", res("list", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"escaped slash splits", "GET", "/api/v1/pods/a%2Fb", res("get", "api", "", "v1", "", "pods", "b", "a", "pods", "a", "b"), false},

		// methods: exact, upper-case names only
		{"options on resource", "OPTIONS", "/api/v1/pods", res("", "api", "", "v1", "", "pods", "", "", "pods"), false},
		{"lowercase get is unknown", "get", "/api/v1/pods/foo", res("", "api", "", "v1", "", "pods", "", "foo", "pods", "foo"), false},
		{"connect", "CONNECT", "/api/v1/namespaces/x/pods/p/exec", res("", "api", "", "v1", "x", "pods", "exec", "p", "pods", "p", "exec"), false},
		{"post subresource", "POST", "/api/v1/namespaces/x/pods/p/eviction", res("create", "api", "", "v1", "x", "pods", "eviction", "p", "pods", "p", "eviction"), false},
		{"post collection never list", "POST", "/api/v1/pods?watch=1", res("create", "api", "", "v1", "", "pods", "", "", "pods"), false},
	})
}

// A request with an empty path or no URL must not panic.
func TestResolveDegenerateRequests(t *testing.T) {
	r := NewResolver()
	got, err := r.Resolve(&http.Request{Method: "GET", URL: &url.URL{}})
	if err != nil || got.IsResourceRequest || got.Verb != "get" || got.Path != "" {
		t.Errorf("empty path: got %+v, %v", got, err)
	}
	got, err = r.Resolve(&http.Request{Method: "GET"})
	if err == nil || got == nil || got.IsResourceRequest || got.Verb != "get" {
		t.Errorf("nil URL: got %+v, %v", got, err)
	}
}

// Callers may configure their own prefixes, as kube's factory allows.
func TestResolveCustomPrefixes(t *testing.T) {
	r := &Resolver{APIPrefixes: map[string]bool{"api": true, "custom": true}, GrouplessAPIPrefixes: map[string]bool{"api": true}}
	got, err := r.Resolve(&http.Request{Method: "GET", URL: &url.URL{Path: "/custom/g/v1/things/a"}})
	if err != nil || !got.IsResourceRequest || got.APIPrefix != "custom" || got.APIGroup != "g" || got.Name != "a" {
		t.Errorf("custom prefix: got %+v, %v", got, err)
	}
	got, _ = r.Resolve(&http.Request{Method: "GET", URL: &url.URL{Path: "/apis/g/v1/things"}})
	if got.IsResourceRequest {
		t.Errorf("apis is not configured, got %+v", got)
	}
}
