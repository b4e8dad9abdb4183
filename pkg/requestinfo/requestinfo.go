// Package requestinfo derives kube-apiserver's RequestInfo (verb, group,
// version, namespace, resource, name, ...) from an HTTP request, with the
// same rules as k8s.io/apiserver's RequestInfoFactory, so that
// authorization, audit and admission see exactly what kube would see.
package requestinfo

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// RequestInfo is what the resolver learned about a request.
type RequestInfo struct {
	// IsResourceRequest is true for /{prefix}[/{group}]/{version}/{...} paths.
	IsResourceRequest bool
	// Path is req.URL.Path, unmodified.
	Path string
	// Verb is the kube verb (get list watch create update patch delete
	// deletecollection proxy) for resource requests, "" for a resource
	// request with an unknown HTTP method, and the lowercase HTTP method for
	// non-resource requests.
	Verb string

	APIPrefix   string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts are the path segments starting at {resource}/{name}.
	Parts []string

	// FieldSelector and LabelSelector are the raw (first) query values, set
	// only for list, watch and deletecollection not addressed via the
	// deprecated /watch/ path prefix.
	FieldSelector string
	LabelSelector string
}

// Resolver turns requests into RequestInfo. Prefixes are path segments
// without slashes; a prefix in GrouplessAPIPrefixes (like "api") has no
// {group} segment. Only prefixes also in APIPrefixes count.
type Resolver struct {
	APIPrefixes          map[string]bool
	GrouplessAPIPrefixes map[string]bool
}

// NewResolver returns a Resolver with kube-apiserver's defaults: /api (the
// groupless legacy prefix) and /apis.
func NewResolver() *Resolver {
	return &Resolver{
		APIPrefixes:          map[string]bool{"api": true, "apis": true},
		GrouplessAPIPrefixes: map[string]bool{"api": true},
	}
}

// Path segments that are verbs rather than resources (the deprecated
// /{version}/watch/... and /{version}/proxy/... forms).
var (
	pathVerbs              = map[string]bool{"proxy": true, "watch": true}
	pathVerbsNoSubresource = map[string]bool{"proxy": true}
	// A segment after namespaces/{ns} that names a subresource of the
	// namespace rather than a namespaced resource.
	namespaceSubresources = map[string]bool{"status": true, "finalize": true}
	verbsWithSelectors    = map[string]bool{"list": true, "watch": true, "deletecollection": true}
)

var methodVerbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodHead:   "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// Resolve returns the RequestInfo for req. As in kube, a non-nil error
// comes with the info known so far (a /watch or /proxy path with nothing
// after the verb).
func (r *Resolver) Resolve(req *http.Request) (*RequestInfo, error) {
	if req.URL == nil {
		// kube would dereference nil; a server must not panic on it.
		return &RequestInfo{Verb: strings.ToLower(req.Method)}, errors.New("request has no URL")
	}
	info := &RequestInfo{Path: req.URL.Path, Verb: strings.ToLower(req.Method)}

	parts := splitPath(req.URL.Path)
	if len(parts) < 3 || !r.APIPrefixes[parts[0]] {
		return info, nil
	}
	// kube records the prefix even when /apis/{group}/{version} then turns
	// out to be a non-resource (discovery) request.
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if !r.GrouplessAPIPrefixes[info.APIPrefix] {
		// Need group, version and at least one more segment.
		if len(parts) < 3 {
			return info, nil
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	verbFromPath := pathVerbs[parts[0]]
	if verbFromPath {
		if len(parts) < 2 {
			return info, fmt.Errorf("unable to determine kind and namespace from url, %v", req.URL)
		}
		info.Verb = parts[0]
		parts = parts[1:]
	} else {
		info.Verb = methodVerbs[req.Method] // "" for any other method
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.Namespace = parts[1]
			if len(parts) > 2 && !namespaceSubresources[parts[2]] {
				parts = parts[2:]
			}
		}
	}
	info.Parts = parts

	// Parts are resource/name/subresource/anything-else.
	info.Resource = parts[0]
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	if len(parts) >= 3 && !pathVerbsNoSubresource[info.Verb] {
		info.Subresource = parts[2]
	}

	if info.Name == "" && info.Verb == "get" {
		resolveCollectionGet(info, req)
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}

	// The deprecated /watch/ prefix serves single objects too, which do not
	// honour selectors, so kube never reports selectors for it.
	if !verbFromPath && verbsWithSelectors[info.Verb] {
		q := req.URL.Query()
		info.FieldSelector = firstValue(q, "fieldSelector")
		info.LabelSelector = firstValue(q, "labelSelector")
	}
	return info, nil
}

// resolveCollectionGet turns a nameless get into list or watch and, like
// kube, takes the name from a fieldSelector requiring metadata.name. The
// query is decoded into internal ListOptions with apimachinery's parameter
// codec, exactly as kube does.
func resolveCollectionGet(info *RequestInfo, req *http.Request) {
	q := req.URL.Query()
	opts := metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		// kube drops every decoded option on error but still honours
		// watch, read with its own (ToLower) comparison.
		opts = metainternalversion.ListOptions{}
		if v := q["watch"]; len(v) > 0 {
			switch strings.ToLower(v[0]) {
			case "false", "0":
			default:
				opts.Watch = true
			}
		}
	}
	info.Verb = "list"
	if opts.Watch {
		info.Verb = "watch"
	}
	info.Name = nameFromFieldSelector(opts.FieldSelector)
}

// nameFromFieldSelector is the name a field selector requiring metadata.name selects, when it
// is a valid path segment ("" otherwise): kube authorizes such a list or watch as one of the
// named object.
func nameFromFieldSelector(sel fields.Selector) string {
	if sel == nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	// kube's path.IsValidPathSegmentName, now an alias of this.
	if !ok || len(content.IsPathSegmentName(name)) != 0 {
		return ""
	}
	return name
}

// splitPath returns the segments of a URL path; only leading and trailing
// slashes are dropped, so "a//b" keeps its empty middle segment, as in kube.
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

func firstValue(q map[string][]string, key string) string {
	if v := q[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
