package requestinfo

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

var kubeVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true, "proxy": true,
}

// FuzzResolve checks that no request panics the resolver and that results
// keep kube's invariants. Note kube does leave Verb empty for a resource
// request with an unknown method, and APIVersion empty for "/api//x".
func FuzzResolve(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/api/v1/namespaces/ns/pods", "watch=1&fieldSelector=metadata.name%3Dp"},
		{"GET", "/apis/apps/v1/watch/namespaces/ns/deployments/d", "labelSelector=a%20in%20(b)"},
		{"DELETE", "/api/v1/namespaces/x/status", "limit=x"},
		{"PUT", "/api/v1/namespaces/x/finalize", ""},
		{"OPTIONS", "/api/v1/proxy", ""},
		{"HEAD", "//api//v1//", "watch"},
		{"get", "/apis/g/v", "fieldSelector=metadata.name%3D%3D..,a%3Db"},
		{"GET", "/healthz", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	r := NewResolver()
	f.Fuzz(func(t *testing.T, method, path, query string) {
		req := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: query}}
		info, err := r.Resolve(req)
		if info == nil {
			t.Fatal("nil info")
		}
		if again, err2 := r.Resolve(req); !reflect.DeepEqual(info, again) || (err == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %+v vs %+v", info, again)
		}
		if info.Path != path {
			t.Fatalf("Path %q, want %q", info.Path, path)
		}
		if !info.IsResourceRequest {
			checkNonResource(t, r, info, method, err)
			return
		}
		checkResource(t, r, info, method, err)
	})
}

func checkNonResource(t *testing.T, r *Resolver, info *RequestInfo, method string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("non-resource request with error %v", err)
	}
	if info.Verb != strings.ToLower(method) {
		t.Fatalf("non-resource Verb %q for method %q", info.Verb, method)
	}
	if info.APIPrefix != "" && !r.APIPrefixes[info.APIPrefix] {
		t.Fatalf("unknown APIPrefix %q", info.APIPrefix)
	}
	rest := *info
	rest.Path, rest.Verb, rest.APIPrefix = "", "", ""
	if !reflect.DeepEqual(rest, RequestInfo{}) {
		t.Fatalf("non-resource request has resource fields: %+v", info)
	}
}

func checkResource(t *testing.T, r *Resolver, info *RequestInfo, method string, err error) {
	t.Helper()
	if !r.APIPrefixes[info.APIPrefix] {
		t.Fatalf("resource request with APIPrefix %q", info.APIPrefix)
	}
	if r.GrouplessAPIPrefixes[info.APIPrefix] && info.APIGroup != "" {
		t.Fatalf("group %q under groupless prefix", info.APIGroup)
	}
	if err != nil {
		// Only a bare /watch or /proxy fails, before the verb is decided.
		if info.Verb != strings.ToLower(method) || info.Parts != nil {
			t.Fatalf("error result %+v", info)
		}
		return
	}
	if len(info.Parts) == 0 || info.Resource != info.Parts[0] {
		t.Fatalf("Resource %q, Parts %q", info.Resource, info.Parts)
	}
	if !strings.HasSuffix(strings.Trim(info.Path, "/"), strings.Join(info.Parts, "/")) {
		t.Fatalf("Parts %q are not the end of %q", info.Parts, info.Path)
	}
	if len(info.Parts) >= 2 && info.Name != info.Parts[1] {
		t.Fatalf("Name %q, Parts %q", info.Name, info.Parts)
	}
	if len(info.Parts) == 1 && info.Name != "" {
		// The name came from a field selector: only on list/watch, and
		// only if it could have been a path segment.
		if info.Verb != "list" && info.Verb != "watch" || len(content.IsPathSegmentName(info.Name)) != 0 {
			t.Fatalf("Name %q from a field selector on verb %q", info.Name, info.Verb)
		}
	}
	_, knownMethod := methodVerbs[method]
	if info.Verb == "" && knownMethod || info.Verb != "" && !kubeVerbs[info.Verb] {
		t.Fatalf("Verb %q for method %q", info.Verb, method)
	}
	if info.Name == "" && (info.Verb == "get" || info.Verb == "delete") {
		t.Fatalf("Verb %q without a name", info.Verb)
	}
	if (info.FieldSelector != "" || info.LabelSelector != "") && !verbsWithSelectors[info.Verb] {
		t.Fatalf("selectors on verb %q", info.Verb)
	}
}
