package requestinfo

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

type resolveCase struct {
	name    string
	method  string
	url     string      // path and query
	want    RequestInfo // Path is filled in from url
	wantErr bool
}

// runCases resolves each case with the default resolver and compares the
// whole RequestInfo, so unexpected extra fields fail too.
func runCases(t *testing.T, cases []resolveCase) {
	t.Helper()
	r := NewResolver()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.ParseRequestURI(tc.url)
			if err != nil {
				t.Fatalf("bad test url %q: %v", tc.url, err)
			}
			req := &http.Request{Method: tc.method, URL: u}
			got, err := r.Resolve(req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			want := tc.want
			want.Path = u.Path
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("%s %s\n got %+v\nwant %+v", tc.method, tc.url, *got, want)
			}
		})
	}
}

// res builds an expected resource-request RequestInfo.
func res(verb, prefix, group, version, ns, resource, sub, name string, parts ...string) RequestInfo {
	return RequestInfo{
		IsResourceRequest: true, Verb: verb,
		APIPrefix: prefix, APIGroup: group, APIVersion: version, Namespace: ns,
		Resource: resource, Subresource: sub, Name: name, Parts: parts,
	}
}

// withSel returns info with the given raw selectors.
func withSel(info RequestInfo, field, label string) RequestInfo {
	info.FieldSelector, info.LabelSelector = field, label
	return info
}

// nonRes builds an expected non-resource RequestInfo.
func nonRes(verb string) RequestInfo { return RequestInfo{Verb: verb} }
