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
		path := "/apis/" + k.GVK.Group + "/" + k.GVK.Version + "/"
		if k.Namespaced {
			path += "namespaces/{namespace}/"
		}
		path += k.Resource + "/{name}"
		ref := spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(customDefinitionName(k.GVK))}}
		get := &spec3.Operation{OperationProps: spec3.OperationProps{
			OperationId: "read" + k.GVK.Kind,
			Responses: &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{
				200: {ResponseProps: spec3.ResponseProps{Description: "OK", Content: map[string]*spec3.MediaType{
					"application/json": {MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}}}}}}},
		}}
		get.Extensions = spec.Extensions{"x-kubernetes-action": "get", extGVK: gvkExtension(k.GVK)}
		paths[path] = &spec3.Path{PathProps: spec3.PathProps{Get: get}}
	}
	doc := &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: all},
	}
	return json.Marshal(doc)
}
