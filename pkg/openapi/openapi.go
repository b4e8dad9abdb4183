package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Kind is one kind a backend serves.
type Kind struct {
	// GroupVersion is the kind's group/version, e.g. {Group: "apps", Version: "v1"};
	// the empty group is the legacy core group.
	GroupVersion schema.GroupVersion
	// Kind is e.g. "Deployment".
	Kind string
	// Resource is the plural resource name, e.g. "deployments".
	Resource string
	// Namespaced kinds get /namespaces/{namespace}/ paths.
	Namespaced bool
	// Verbs are the discovery verbs (get, list, watch, create, update, patch,
	// delete, deletecollection) that decide which operations are published.
	// Nil means all of them.
	Verbs []string
	// Subresources the kind serves: "status" and "scale" (autoscaling/v1
	// Scale) get get/put/patch operations, "finalize" put; others are
	// ignored.
	Subresources []string
	// New returns a new object of the kind, e.g. &appsv1.Deployment{}.
	New func() runtime.Object
	// NewList returns a new list of the kind, e.g. &appsv1.DeploymentList{};
	// nil leaves out the list operations.
	NewList func() runtime.Object
}

// The info of every document (kube puts its own version there; no client
// reads it).
const (
	docTitle   = "Kubernetes"
	docVersion = "unversioned"
)

// V3 builds the OpenAPI v3 document for one group/version, as served at
// /openapi/v3/apis/<group>/<version> (or /openapi/v3/api/v1), as JSON. Kinds
// of other group/versions are left out.
func V3(gv schema.GroupVersion, kinds []Kind) ([]byte, error) {
	resolved, err := resolveKinds(kinds, &gv)
	if err != nil {
		return nil, err
	}
	b := newSchemaBuilder(true)
	routes, err := buildRoutes(b, resolved)
	if err != nil {
		return nil, err
	}
	if len(routes) == 0 {
		routes = []route{resourcesRoute(gv)}
		if _, err := b.define(resourceListType); err != nil {
			return nil, err
		}
	}
	doc := &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
		Paths:   &spec3.Paths{Paths: map[string]*spec3.Path{}},
		Components: &spec3.Components{
			Schemas: b.definitions(),
			SecuritySchemes: spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{
				SecuritySchemeProps: spec3.SecuritySchemeProps{
					Type: "apiKey", Name: "authorization", In: "header",
					Description: "Bearer Token authentication",
				},
			}},
		},
		SecurityRequirement: []map[string][]string{{"BearerToken": {}}},
	}
	for _, r := range routes {
		doc.Paths.Paths[r.path] = r.v3(b)
	}
	return json.Marshal(doc)
}

// V2 builds one swagger 2.0 document covering all kinds, as served at
// /openapi/v2, as JSON.
func V2(kinds []Kind) ([]byte, error) {
	resolved, err := resolveKinds(kinds, nil)
	if err != nil {
		return nil, err
	}
	b := newSchemaBuilder(false)
	routes, err := buildRoutes(b, resolved)
	if err != nil {
		return nil, err
	}
	defs := spec.Definitions{}
	for name, s := range b.definitions() {
		defs[name] = *s
	}
	doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
		Paths:       &spec.Paths{Paths: map[string]spec.PathItem{}},
		Definitions: defs,
		SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{
			SecuritySchemeProps: spec.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header",
				Description: "Bearer Token authentication",
			},
		}},
		Security: []map[string][]string{{"BearerToken": {}}},
	}}
	for _, r := range routes {
		doc.Paths.Paths[r.path] = r.v2(b)
	}
	return json.Marshal(doc)
}

// V2ProtobufContentType is the Content-Type of a V2Protobuf answer. kubectl
// and client-go's discovery client ask /openapi/v2 for
// "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" (a form
// Go's mime package cannot parse back); kube answers both that and this
// Accept value with this Content-Type, and application/json with the JSON.
const V2ProtobufContentType = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

// V2Protobuf converts a V2 document to the protobuf form (a gnostic
// openapi_v2.Document) that kubectl and client-go's discovery client
// request from /openapi/v2.
func V2Protobuf(v2JSON []byte) ([]byte, error) {
	doc, err := openapiv2.ParseDocument(v2JSON)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse v2 document: %w", err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(doc)
}

// Hash is the hash kube publishes for a document in the /openapi/v3 index
// (and as its ETag): the uppercase hex SHA-512 of its bytes.
func Hash(doc []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(doc))
}

// V3DocumentPath is where the document of gv is served: /openapi/v3/api/v1
// or /openapi/v3/apis/<group>/<version>.
func V3DocumentPath(gv schema.GroupVersion) string {
	return "/openapi/v3/" + gvPath(gv)
}

type v3Index struct {
	Paths map[string]v3IndexEntry `json:"paths"`
}

type v3IndexEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// V3Index returns the /openapi/v3 discovery document, given the
// per-group-version documents: {"paths": {"api/v1": {"serverRelativeURL":
// "/openapi/v3/api/v1?hash=<HASH>"}, "apis/apps/v1": {...}}}.
func V3Index(docs map[schema.GroupVersion][]byte) ([]byte, error) {
	idx := v3Index{Paths: map[string]v3IndexEntry{}}
	for gv, doc := range docs {
		if gv.Version == "" {
			return nil, fmt.Errorf("openapi: group version %q has no version", gv)
		}
		idx.Paths[gvPath(gv)] = v3IndexEntry{ServerRelativeURL: V3DocumentPath(gv) + "?hash=" + Hash(doc)}
	}
	return json.Marshal(idx)
}

func resolveKinds(kinds []Kind, only *schema.GroupVersion) ([]kindTypes, error) {
	var out []kindTypes
	for _, k := range kinds {
		if only != nil && k.GroupVersion != *only {
			continue
		}
		kt, err := resolveKind(k)
		if err != nil {
			return nil, err
		}
		out = append(out, kt)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if gvPath(out[i].GroupVersion) != gvPath(out[j].GroupVersion) {
			return gvPath(out[i].GroupVersion) < gvPath(out[j].GroupVersion)
		}
		return out[i].Resource < out[j].Resource
	})
	return out, nil
}

func (r route) v3(b *schemaBuilder) *spec3.Path {
	p := &spec3.Path{}
	for _, prm := range r.params {
		p.Parameters = append(p.Parameters, prm.v3())
	}
	for _, op := range r.ops {
		o := &spec3.Operation{OperationProps: spec3.OperationProps{
			Tags:        []string{op.tag},
			Description: op.description,
			OperationId: op.id,
			Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
		}}
		for _, prm := range op.params {
			o.Parameters = append(o.Parameters, prm.v3())
		}
		if op.body != nil {
			o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
				Content:  mediaTypes(b, op.body, op.bodyMedia),
				Required: op.bodyReq,
			}}
		}
		for _, resp := range op.responses {
			rp := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: resp.description}}
			if resp.body != nil {
				rp.Content = mediaTypes(b, resp.body, resp.media)
			}
			o.Responses.StatusCodeResponses[resp.code] = rp
		}
		o.Extensions = op.extensions()
		switch op.method {
		case "get":
			p.Get = o
		case "put":
			p.Put = o
		case "post":
			p.Post = o
		case "patch":
			p.Patch = o
		case "delete":
			p.Delete = o
		}
	}
	return p
}

func mediaTypes(b *schemaBuilder, t reflect.Type, media []string) map[string]*spec3.MediaType {
	out := map[string]*spec3.MediaType{}
	for _, m := range media {
		s := spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(b.names[t])}}
		out[m] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &s}}
	}
	return out
}

func (op operation) extensions() spec.Extensions {
	ext := spec.Extensions{}
	if op.action != "" {
		ext[extAction] = op.action
	}
	if op.gvk != nil {
		ext[extGVK] = gvkExtension(*op.gvk)
	}
	if len(ext) == 0 {
		return nil
	}
	return ext
}

func (p param) v3() *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name:        p.name,
		In:          p.in,
		Description: p.description,
		Required:    p.required,
		Schema:      &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{p.typ}, UniqueItems: true}},
	}}
}

func (p param) v2() spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: p.name, In: p.in, Description: p.description, Required: p.required},
		SimpleSchema:      spec.SimpleSchema{Type: p.typ},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func (r route) v2(b *schemaBuilder) spec.PathItem {
	var item spec.PathItem
	for _, prm := range r.params {
		item.Parameters = append(item.Parameters, prm.v2())
	}
	for _, op := range r.ops {
		o := &spec.Operation{OperationProps: spec.OperationProps{
			Description: op.description,
			Consumes:    op.bodyMedia,
			Produces:    objectMedia,
			Schemes:     []string{"https"},
			Tags:        []string{op.tag},
			ID:          op.id,
			Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
		}}
		if op.body == nil {
			o.Consumes = anyMedia
		}
		for _, resp := range op.responses {
			if len(resp.media) > len(o.Produces) {
				o.Produces = resp.media
			}
		}
		if op.body != nil {
			o.Parameters = append(o.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
				Name: "body", In: "body", Required: op.bodyReq,
				Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(b.names[op.body])}},
			}})
		}
		for _, prm := range op.params {
			o.Parameters = append(o.Parameters, prm.v2())
		}
		for _, resp := range op.responses {
			rp := spec.Response{ResponseProps: spec.ResponseProps{Description: resp.description}}
			if resp.body != nil {
				rp.Schema = &spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(b.names[resp.body])}}
			}
			o.Responses.StatusCodeResponses[resp.code] = rp
		}
		o.Extensions = op.extensions()
		switch op.method {
		case "get":
			item.Get = o
		case "put":
			item.Put = o
		case "post":
			item.Post = o
		case "patch":
			item.Patch = o
		case "delete":
			item.Delete = o
		}
	}
	return item
}

// MergeV3Index merges /openapi/v3 indexes of several servers (first one wins per path).
func MergeV3Index(indexes [][]byte) ([]byte, error) {
	merged := map[string]json.RawMessage{}
	for _, idx := range indexes {
		var doc struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(idx, &doc); err != nil {
			return nil, err
		}
		for p, v := range doc.Paths {
			if _, ok := merged[p]; !ok {
				merged[p] = v
			}
		}
	}
	return json.Marshal(map[string]any{"paths": merged})
}

// V2Definitions are the swagger 2.0 definitions of the kinds and their lists (what V2 holds
// for them), without the paths: what typing objects (server-side apply) needs, for a fraction
// of building the whole document.
func V2Definitions(kinds []Kind) (map[string]*spec.Schema, error) {
	resolved, err := resolveKinds(kinds, nil)
	if err != nil {
		return nil, err
	}
	b := newSchemaBuilder(false)
	for _, k := range resolved {
		b.addGVK(k.object, k.GroupVersion.WithKind(k.Kind.Kind))
		if _, err := b.define(k.object); err != nil {
			return nil, err
		}
		if k.list != nil {
			b.addGVK(k.list, k.GroupVersion.WithKind(k.Kind.Kind+"List"))
			if _, err := b.define(k.list); err != nil {
				return nil, err
			}
		}
	}
	return b.definitions(), nil
}
