package openapi

import (
	"reflect"
	"strings"

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
