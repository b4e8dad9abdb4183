package openapi

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/spec3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// ObjectMetaName is ObjectMeta's definition name.
const ObjectMetaName = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// CustomResourceDefinitions are the swagger 2.0 definitions of a custom resource whose
// object schema is s (a CRD version's, as kube's schema packages publish it): ObjectMeta and
// what it refers to, and the kind's own definition with apiVersion, kind and metadata added
// and its group/version/kind marked, as kube's CRD OpenAPI builder does. They type the
// resource's objects for server-side apply.
func CustomResourceDefinitions(gvk schema.GroupVersionKind, s *spec.Schema) (map[string]*spec.Schema, error) {
	b := newSchemaBuilder(false)
	return customDefinitions(b, gvk, s)
}

func customDefinitions(b *schemaBuilder, gvk schema.GroupVersionKind, s *spec.Schema) (map[string]*spec.Schema, error) {
	if _, err := b.refTo(reflect.TypeOf(metav1.ObjectMeta{})); err != nil {
		return nil, err
	}
	defs := b.definitions()
	root := *s
	props := make(map[string]spec.Schema, len(s.Properties)+3)
	for k, v := range s.Properties {
		props[k] = v
	}
	props["apiVersion"] = simpleSchema("string", "")
	props["kind"] = simpleSchema("string", "")
	props["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(ObjectMetaName)}}
	root.Properties = props
	root.Extensions = spec.Extensions{}
	for k, v := range s.Extensions {
		root.Extensions[k] = v
	}
	setExtension(&root, extGVK, []interface{}{gvkExtension(gvk)})
	defs[customDefinitionName(gvk)] = &root
	return defs, nil
}

// customDefinitionName is kube's name for a custom resource's definition: the group reversed,
// then version and kind ("com.example.v1.Widget").
func customDefinitionName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(append(parts, gvk.Version, gvk.Kind), ".")
}

// CustomKind is a custom resource's kind, where it is served, and its object schema.
type CustomKind struct {
	GVK        schema.GroupVersionKind
	Resource   string
	Namespaced bool
	Schema     *spec.Schema
}

// CustomResourceV3 is the OpenAPI v3 document of a group/version of custom resources: their
// schemas (with ObjectMeta) under components, and each kind's read path, by which kubectl
// explain finds the schema. Only reads are described: kubectl treats a kind it finds no PATCH
// path for as a CRD's and leaves field validation to the server.
func CustomResourceV3(kinds []CustomKind) ([]byte, error) {
	b := newSchemaBuilder(true)
	all := map[string]*spec.Schema{}
	paths := map[string]*spec3.Path{}
	for _, k := range kinds {
		defs, err := customDefinitions(b, k.GVK, k.Schema)
		if err != nil {
			return nil, err
		}
		for name, d := range defs {
			all[name] = d
		}
		ref := spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(customDefinitionName(k.GVK))}}
		get := &spec3.Operation{OperationProps: spec3.OperationProps{
			OperationId: "read" + k.GVK.Kind,
			Responses: &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{
				200: {ResponseProps: spec3.ResponseProps{Description: "OK", Content: map[string]*spec3.MediaType{
					"application/json": {MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}}}}}}},
		}}
		get.Extensions = spec.Extensions{"x-kubernetes-action": "get", extGVK: gvkExtension(k.GVK)}
		paths[customPath(k)] = &spec3.Path{PathProps: spec3.PathProps{Get: get}}
	}
	doc := &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: all},
	}
	return json.Marshal(doc)
}

// AddCustomToV2 adds custom resources to a swagger 2.0 document: their definitions (with
// ObjectMeta) and read paths, as CustomResourceV3 does for v3.
func AddCustomToV2(base []byte, kinds []CustomKind) ([]byte, error) {
	var doc spec.Swagger
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, err
	}
	if doc.Definitions == nil {
		doc.Definitions = spec.Definitions{}
	}
	if doc.Paths == nil {
		doc.Paths = &spec.Paths{Paths: map[string]spec.PathItem{}}
	}
	b := newSchemaBuilder(false)
	for _, k := range kinds {
		defs, err := customDefinitions(b, k.GVK, k.Schema)
		if err != nil {
			return nil, err
		}
		for name, d := range defs {
			if _, ok := doc.Definitions[name]; !ok {
				doc.Definitions[name] = *d
			}
		}
		ref := spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(customDefinitionName(k.GVK))}}
		get := &spec.Operation{OperationProps: spec.OperationProps{ID: "read" + k.GVK.Kind,
			Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{
				200: {ResponseProps: spec.ResponseProps{Description: "OK", Schema: &ref}}}}}}}
		get.Extensions = spec.Extensions{"x-kubernetes-action": "get", extGVK: gvkExtension(k.GVK)}
		doc.Paths.Paths[customPath(k)] = spec.PathItem{PathItemProps: spec.PathItemProps{Get: get}}
	}
	return json.Marshal(&doc)
}

func customPath(k CustomKind) string {
	path := "/apis/" + k.GVK.Group + "/" + k.GVK.Version + "/"
	if k.Namespaced {
		path += "namespaces/{namespace}/"
	}
	return path + k.Resource + "/{name}"
}

// MergeV2 merges swagger 2.0 documents (every service's /openapi/v2) into one: definitions and
// paths of all, the first document's for any name two share.
func MergeV2(docs [][]byte) ([]byte, error) {
	var merged spec.Swagger
	for i, data := range docs {
		var doc spec.Swagger
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, err
		}
		if i == 0 {
			merged = doc
			if merged.Definitions == nil {
				merged.Definitions = spec.Definitions{}
			}
			if merged.Paths == nil {
				merged.Paths = &spec.Paths{Paths: map[string]spec.PathItem{}}
			}
			continue
		}
		for name, d := range doc.Definitions {
			if _, ok := merged.Definitions[name]; !ok {
				merged.Definitions[name] = d
			}
		}
		if doc.Paths != nil {
			for p, item := range doc.Paths.Paths {
				if _, ok := merged.Paths.Paths[p]; !ok {
					merged.Paths.Paths[p] = item
				}
			}
		}
	}
	return json.Marshal(&merged)
}
