package registry

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// Custom resources are unstructured objects: the same machinery serves them, with what kube
// does differently for them (JSON and YAML only, no strategic merge patch, field managers
// typed by their schema).

// NewUnstructured makes New for a resource of unstructured objects of gvk.
func NewUnstructured(gvk schema.GroupVersionKind) func() runtime.Object {
	return func() runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
}

// NewUnstructuredList makes NewList for them; gvk is the item's kind.
func NewUnstructuredList(gvk schema.GroupVersionKind) func() runtime.Object {
	return func() runtime.Object {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
}

// isUnstructured reports whether r's objects are unstructured (a custom resource).
func (r *Resource) isUnstructured() bool {
	_, ok := r.New().(runtime.Unstructured)
	return ok
}

// unstructuredField is the top-level field an unstructured object keeps what a typed one
// keeps in the Go field name ("Status" -> "status").
func unstructuredField(obj runtime.Object, name string) (map[string]any, string, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, "", false
	}
	return u.Object, strings.ToLower(name[:1]) + name[1:], true
}

// unstructuredConvertor is the object convertor of a custom resource's field manager: one
// version is served as stored (conversion between versions is the CRD's, later), so
// converting is setting the apiVersion.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, _ any) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return runtime.NewNotRegisteredErrForType("unstructured", nil)
	}
	dst.Object = maps.Clone(src.DeepCopy().Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	out := in.DeepCopyObject()
	if kind, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{in.GetObjectKind().GroupVersionKind()}); ok {
		out.GetObjectKind().SetGroupVersionKind(kind)
	}
	return out, nil
}

func (unstructuredConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// unstructuredCreater makes empty unstructured objects for the field manager.
type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	return NewUnstructured(kind)(), nil
}

type nopDefaulter struct{}

func (nopDefaulter) Default(runtime.Object) {}

// deducedTypeConverter types custom resources that have no schema type converter by their
// content (lists are atomic, maps granular).
var deducedTypeConverter = managedfields.NewDeducedTypeConverter()
