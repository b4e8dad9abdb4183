package openapi

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// param is a path or query parameter of a route.
type param struct {
	name, in, description, typ string
	required                   bool
}

// response is one status code of an operation.
type response struct {
	code        int
	description string
	body        reflect.Type // nil: no body
	media       []string
}

// operation is one method on a route, in a form that renders to both v2 and v3.
type operation struct {
	method      string // get, put, post, patch, delete
	action      string // x-kubernetes-action
	id          string // operationId
	description string
	tag         string
	gvk         *schema.GroupVersionKind
	params      []param
	body        reflect.Type // request body; nil: none
	bodyMedia   []string
	bodyReq     bool
	responses   []response
}

// route is one path with its path-level parameters and operations.
type route struct {
	path   string
	params []param
	ops    []operation
}

var (
	objectMedia = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	streamMedia = append(append([]string{}, objectMedia...),
		"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
	anyMedia   = []string{"*/*"}
	patchMedia = []string{
		"application/apply-patch+yaml",
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
	}

	statusType        = reflect.TypeOf(metav1.Status{})
	deleteOptionsType = reflect.TypeOf(metav1.DeleteOptions{})
	patchType         = reflect.TypeOf(metav1.Patch{})
	watchEventType    = reflect.TypeOf(metav1.WatchEvent{})
	resourceListType  = reflect.TypeOf(metav1.APIResourceList{})
	scaleType         = reflect.TypeOf(autoscalingv1.Scale{})
	scaleGVK          = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

	listOptionsType   = reflect.TypeOf(metav1.ListOptions{})
	createOptionsType = reflect.TypeOf(metav1.CreateOptions{})
	updateOptionsType = reflect.TypeOf(metav1.UpdateOptions{})
	patchOptionsType  = reflect.TypeOf(metav1.PatchOptions{})
)

// defaultVerbs are the verbs of a Kind that lists none.
var defaultVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

const (
	namespaceParamDoc = "object name and auth scope, such as for teams and projects"
	prettyParamDoc    = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."
)

// gvPrefix is the URL prefix of a group/version: /api/v1 or /apis/<group>/<version>.
func gvPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// gvPath is the key of a group/version in the /openapi/v3 index and the
// path of its document below /openapi/v3/.
func gvPath(gv schema.GroupVersion) string {
	return strings.TrimPrefix(gvPrefix(gv), "/")
}

// operationGV is how kube spells a group/version inside operation ids:
// CoreV1, AppsV1, RbacAuthorizationV1, ExampleComV1alpha1.
func operationGV(gv schema.GroupVersion) string {
	group := gv.Group
	if group == "" {
		group = "core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(upperFirst(part))
	}
	b.WriteString(upperFirst(gv.Version))
	return b.String()
}

// operationTag is the tag of a group/version's operations: core_v1, apps_v1,
// rbacAuthorization_v1.
func operationTag(gv schema.GroupVersion) string {
	name := operationGV(schema.GroupVersion{Group: gv.Group})
	return lowerFirst(name) + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// optionParams returns the query parameters of a metav1 options type: its
// scalar and []string json fields, described by its SwaggerDoc (kube's
// apiserver derives them the same way).
func optionParams(t reflect.Type) []param {
	docs := swaggerDoc(t)
	var out []param
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := derefType(f.Type)
		var typ string
		switch ft.Kind() {
		case reflect.String:
			typ = "string"
		case reflect.Bool:
			typ = "boolean"
		case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
			typ = "integer"
		case reflect.Slice:
			if ft.Elem().Kind() != reflect.String {
				continue
			}
			typ = "string" // a repeated query parameter, as kube publishes it
		default:
			continue // structs (preconditions) are body-only
		}
		out = append(out, param{name: name, in: "query", description: docs[name], typ: typ})
	}
	return out
}

func mergeParams(lists ...[]param) []param {
	seen := map[string]bool{}
	var out []param
	for _, l := range lists {
		for _, p := range l {
			if !seen[p.in+"/"+p.name] {
				seen[p.in+"/"+p.name] = true
				out = append(out, p)
			}
		}
	}
	sortParams(out)
	return out
}

func sortParams(ps []param) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].in != ps[j].in {
			return ps[i].in < ps[j].in
		}
		return ps[i].name < ps[j].name
	})
}

// kindTypes is a validated Kind: its object and list Go types.
type kindTypes struct {
	Kind
	object reflect.Type
	list   reflect.Type // nil when NewList is nil
	verbs  map[string]bool
}

func resolveKind(k Kind) (kindTypes, error) {
	if k.Kind == "" || k.Resource == "" || k.GroupVersion.Version == "" {
		return kindTypes{}, fmt.Errorf("openapi: kind %+v needs GroupVersion.Version, Kind and Resource", k.GroupVersion.WithKind(k.Kind))
	}
	if k.New == nil {
		return kindTypes{}, fmt.Errorf("openapi: kind %s has no New", k.GroupVersion.WithKind(k.Kind))
	}
	kt := kindTypes{Kind: k, verbs: map[string]bool{}}
	obj := k.New()
	if obj == nil {
		return kindTypes{}, fmt.Errorf("openapi: New of kind %s returned nil", k.GroupVersion.WithKind(k.Kind))
	}
	kt.object = derefType(reflect.TypeOf(obj))
	if kt.object.Kind() != reflect.Struct || kt.object.Name() == "" {
		return kindTypes{}, fmt.Errorf("openapi: New of kind %s returned %T, not a pointer to a named struct", k.GroupVersion.WithKind(k.Kind), obj)
	}
	if k.NewList != nil {
		if list := k.NewList(); list != nil {
			kt.list = derefType(reflect.TypeOf(list))
			if kt.list.Kind() != reflect.Struct || kt.list.Name() == "" {
				return kindTypes{}, fmt.Errorf("openapi: NewList of kind %s returned %T, not a pointer to a named struct", k.GroupVersion.WithKind(k.Kind), list)
			}
		}
	}
	verbs := k.Verbs
	if verbs == nil {
		verbs = defaultVerbs
	}
	for _, v := range verbs {
		kt.verbs[v] = true
	}
	return kt, nil
}

// kindRoutes returns the routes of one kind, as kube's apiserver installs them.
func kindRoutes(k kindTypes) []route {
	gv := k.GroupVersion
	gvk := gv.WithKind(k.Kind.Kind)
	opGV := operationGV(gv)
	tag := operationTag(gv)
	kind := k.Kind.Kind
	prefix := gvPrefix(gv)

	scope := ""
	collection := prefix + "/" + k.Resource
	watchCollection := prefix + "/watch/" + k.Resource
	var pathParams []param
	if k.Namespaced {
		scope = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + k.Resource
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + k.Resource
		pathParams = append(pathParams, param{name: "namespace", in: "path", description: namespaceParamDoc, typ: "string", required: true})
	}
	pretty := param{name: "pretty", in: "query", description: prettyParamDoc, typ: "string"}
	nameParam := param{name: "name", in: "path", description: "name of the " + kind, typ: "string", required: true}

	listParams := optionParams(listOptionsType)
	deleteParams := optionParams(deleteOptionsType)
	ok := func(t reflect.Type, media []string) response {
		return response{code: 200, description: "OK", body: t, media: media}
	}
	created := func(t reflect.Type) response {
		return response{code: 201, description: "Created", body: t, media: objectMedia}
	}
	accepted := func(t reflect.Type) response {
		return response{code: 202, description: "Accepted", body: t, media: objectMedia}
	}
	unauthorized := response{code: 401, description: "Unauthorized"}

	var routes []route

	// The collection: list, create, delete collection.
	coll := route{path: collection, params: mergeParams(pathParams, []param{pretty})}
	if k.list != nil && k.verbs["list"] {
		coll.ops = append(coll.ops, operation{
			method: "get", action: "list", id: "list" + opGV + scope + kind,
			description: "list or watch objects of kind " + kind,
			params:      mergeParams(listParams),
			responses:   []response{ok(k.list, streamMedia), unauthorized},
		})
	}
	if k.verbs["create"] {
		coll.ops = append(coll.ops, operation{
			method: "post", action: "post", id: "create" + opGV + scope + kind,
			description: "create " + article(kind) + " " + kind,
			params:      mergeParams(optionParams(createOptionsType)),
			body:        k.object, bodyMedia: anyMedia, bodyReq: true,
			responses: []response{ok(k.object, objectMedia), created(k.object), accepted(k.object), unauthorized},
		})
	}
	if k.verbs["deletecollection"] {
		coll.ops = append(coll.ops, operation{
			method: "delete", action: "deletecollection", id: "delete" + opGV + "Collection" + scope + kind,
			description: "delete collection of " + kind,
			params:      mergeParams(listParams, deleteParams),
			body:        deleteOptionsType, bodyMedia: anyMedia,
			responses: []response{ok(statusType, objectMedia), unauthorized},
		})
	}
	routes = append(routes, coll)

	// One object: read, replace, patch, delete.
	item := route{path: collection + "/{name}", params: mergeParams(pathParams, []param{nameParam, pretty})}
	if k.verbs["get"] {
		item.ops = append(item.ops, operation{
			method: "get", action: "get", id: "read" + opGV + scope + kind,
			description: "read the specified " + kind,
			responses:   []response{ok(k.object, objectMedia), unauthorized},
		})
	}
	if k.verbs["update"] {
		item.ops = append(item.ops, operation{
			method: "put", action: "put", id: "replace" + opGV + scope + kind,
			description: "replace the specified " + kind,
			params:      mergeParams(optionParams(updateOptionsType)),
			body:        k.object, bodyMedia: anyMedia, bodyReq: true,
			responses: []response{ok(k.object, objectMedia), created(k.object), unauthorized},
		})
	}
	if k.verbs["patch"] {
		item.ops = append(item.ops, operation{
			method: "patch", action: "patch", id: "patch" + opGV + scope + kind,
			description: "partially update the specified " + kind,
			params:      mergeParams(optionParams(patchOptionsType)),
			body:        patchType, bodyMedia: patchMedia, bodyReq: true,
			responses: []response{ok(k.object, objectMedia), created(k.object), unauthorized},
		})
	}
	if k.verbs["delete"] {
		item.ops = append(item.ops, operation{
			method: "delete", action: "delete", id: "delete" + opGV + scope + kind,
			description: "delete " + article(kind) + " " + kind,
			params:      mergeParams(deleteParams),
			body:        deleteOptionsType, bodyMedia: anyMedia,
			responses: []response{ok(statusType, objectMedia), accepted(statusType), unauthorized},
		})
	}
	routes = append(routes, item)

	// Subresources.
	for _, sub := range k.Subresources {
		subType, subGVK := k.object, gvk
		var methods []string
		switch sub {
		case "status":
			methods = []string{"get", "put", "patch"}
		case "scale":
			subType, subGVK = scaleType, scaleGVK
			methods = []string{"get", "put", "patch"}
		case "finalize":
			methods = []string{"put"}
		default:
			continue // log, exec, eviction, ...: not of this kind's schema
		}
		subName := upperFirst(sub)
		r := route{path: collection + "/{name}/" + sub, params: mergeParams(pathParams, []param{nameParam, pretty})}
		for _, m := range methods {
			var op operation
			switch m {
			case "get":
				if !k.verbs["get"] {
					continue
				}
				op = operation{
					method: "get", action: "get", id: "read" + opGV + scope + kind + subName,
					description: "read " + sub + " of the specified " + kind,
					responses:   []response{ok(subType, objectMedia), unauthorized},
				}
			case "put":
				if !k.verbs["update"] {
					continue
				}
				op = operation{
					method: "put", action: "put", id: "replace" + opGV + scope + kind + subName,
					description: "replace " + sub + " of the specified " + kind,
					params:      mergeParams(optionParams(updateOptionsType)),
					body:        subType, bodyMedia: anyMedia, bodyReq: true,
					responses: []response{ok(subType, objectMedia), created(subType), unauthorized},
				}
			case "patch":
				if !k.verbs["patch"] {
					continue
				}
				op = operation{
					method: "patch", action: "patch", id: "patch" + opGV + scope + kind + subName,
					description: "partially update " + sub + " of the specified " + kind,
					params:      mergeParams(optionParams(patchOptionsType)),
					body:        patchType, bodyMedia: patchMedia, bodyReq: true,
					responses: []response{ok(subType, objectMedia), created(subType), unauthorized},
				}
			}
			g := subGVK
			op.gvk = &g
			r.ops = append(r.ops, op)
		}
		routes = append(routes, r)
	}

	// Lists across namespaces.
	if k.Namespaced && k.list != nil && k.verbs["list"] {
		routes = append(routes, route{
			path:   prefix + "/" + k.Resource,
			params: mergeParams(listParams, []param{pretty}),
			ops: []operation{{
				method: "get", action: "list", id: "list" + opGV + kind + "ForAllNamespaces",
				description: "list or watch objects of kind " + kind,
				responses:   []response{ok(k.list, streamMedia), unauthorized},
			}},
		})
	}

	// The deprecated /watch/ paths.
	if k.verbs["watch"] {
		watchList := func(path, id string, params []param) route {
			return route{path: path, params: mergeParams(params, listParams, []param{pretty}), ops: []operation{{
				method: "get", action: "watchlist", id: id,
				description: "watch individual changes to a list of " + kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
				responses:   []response{ok(watchEventType, streamMedia), unauthorized},
			}}}
		}
		routes = append(routes, watchList(watchCollection, "watch"+opGV+scope+kind+"List", pathParams))
		routes = append(routes, route{
			path:   watchCollection + "/{name}",
			params: mergeParams(pathParams, []param{nameParam}, listParams, []param{pretty}),
			ops: []operation{{
				method: "get", action: "watch", id: "watch" + opGV + scope + kind,
				description: "watch changes to an object of kind " + kind + ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
				responses:   []response{ok(watchEventType, streamMedia), unauthorized},
			}},
		})
		if k.Namespaced {
			routes = append(routes, watchList(prefix+"/watch/"+k.Resource, "watch"+opGV+kind+"ListForAllNamespaces", nil))
		}
	}

	for i := range routes {
		for j := range routes[i].ops {
			op := &routes[i].ops[j]
			op.tag = tag
			if op.gvk == nil {
				g := gvk
				op.gvk = &g
			}
		}
	}
	return routes
}

// resourcesRoute is GET <prefix>/, the group/version's APIResourceList.
func resourcesRoute(gv schema.GroupVersion) route {
	return route{path: gvPrefix(gv) + "/", ops: []operation{{
		method: "get", id: "get" + operationGV(gv) + "APIResources",
		description: "get available resources",
		tag:         operationTag(gv),
		responses: []response{
			{code: 200, description: "OK", body: resourceListType, media: objectMedia},
			{code: 401, description: "Unauthorized"},
		},
	}}}
}

func article(word string) string {
	if word != "" && strings.ContainsRune("AEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}

// buildRoutes returns the routes of kinds (already resolved) and the group
// versions they belong to, with the types their operations refer to
// registered in b.
func buildRoutes(b *schemaBuilder, kinds []kindTypes) ([]route, error) {
	var routes []route
	gvs := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		gvs[k.GroupVersion] = true
	}
	var ordered []schema.GroupVersion
	for gv := range gvs {
		ordered = append(ordered, gv)
	}
	sort.Slice(ordered, func(i, j int) bool { return gvPath(ordered[i]) < gvPath(ordered[j]) })
	for _, gv := range ordered {
		routes = append(routes, resourcesRoute(gv))
	}
	for _, k := range kinds {
		routes = append(routes, kindRoutes(k)...)
	}

	seen := map[string]bool{}
	for _, r := range routes {
		if seen[r.path] {
			return nil, fmt.Errorf("openapi: two kinds serve path %s", r.path)
		}
		seen[r.path] = true
	}

	// Kinds and lists carry their GVK; the meta types that operations use
	// carry the GVKs kube's schemes register them under.
	for _, k := range kinds {
		b.addGVK(k.object, k.GroupVersion.WithKind(k.Kind.Kind))
		if k.list != nil {
			b.addGVK(k.list, k.GroupVersion.WithKind(k.Kind.Kind+"List"))
		}
		for _, sub := range k.Subresources {
			if sub == "scale" {
				b.addGVK(scaleType, scaleGVK)
			}
		}
	}
	coreV1 := schema.GroupVersion{Version: "v1"}
	b.addGVK(statusType, coreV1.WithKind("Status"))
	for _, gv := range append([]schema.GroupVersion{coreV1}, ordered...) {
		b.addGVK(deleteOptionsType, gv.WithKind("DeleteOptions"))
		b.addGVK(watchEventType, gv.WithKind("WatchEvent"))
	}
	for _, r := range routes {
		for _, op := range r.ops {
			if op.body != nil {
				if _, err := b.define(op.body); err != nil {
					return nil, err
				}
			}
			for _, resp := range op.responses {
				if resp.body != nil {
					if _, err := b.define(resp.body); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return routes, nil
}
