package registry

import (
	"fmt"
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ScalePaths locate a custom resource's scale (its CRD's scale subresource): simple JSON
// paths like ".spec.replicas".
type ScalePaths struct {
	SpecReplicas, StatusReplicas, LabelSelector string
}

func pathFields(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// toScale is the scale subresource of a kind with spec.replicas, status.replicas and
// spec.selector (the apps workloads), or of a custom resource at its scale paths.
func toScale(r *Resource, obj runtime.Object) (*autoscalingv1.Scale, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if r.Scale == nil {
			return nil, apierrors.NewBadRequest("kind has no scale subresource")
		}
		s := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
		s.ObjectMeta = metav1.ObjectMeta{Name: acc.GetName(), Namespace: acc.GetNamespace(), UID: acc.GetUID(),
			ResourceVersion: acc.GetResourceVersion(), CreationTimestamp: acc.GetCreationTimestamp()}
		if n, ok, _ := unstructured.NestedInt64(u.Object, pathFields(r.Scale.SpecReplicas)...); ok {
			s.Spec.Replicas = int32(n)
		}
		if r.Scale.StatusReplicas != "" {
			if n, ok, _ := unstructured.NestedInt64(u.Object, pathFields(r.Scale.StatusReplicas)...); ok {
				s.Status.Replicas = int32(n)
			}
		}
		if r.Scale.LabelSelector != "" {
			if sel, ok, _ := unstructured.NestedString(u.Object, pathFields(r.Scale.LabelSelector)...); ok {
				s.Status.Selector = sel
			}
		}
		return s, nil
	}
	v := reflect.ValueOf(obj).Elem()
	spec, status := v.FieldByName("Spec"), v.FieldByName("Status")
	if !spec.IsValid() || !status.IsValid() {
		return nil, apierrors.NewBadRequest("kind has no scale subresource")
	}
	s := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	s.ObjectMeta = metav1.ObjectMeta{Name: acc.GetName(), Namespace: acc.GetNamespace(), UID: acc.GetUID(),
		ResourceVersion: acc.GetResourceVersion(), CreationTimestamp: acc.GetCreationTimestamp()}
	if r := spec.FieldByName("Replicas"); r.IsValid() && !r.IsNil() {
		s.Spec.Replicas = int32(r.Elem().Int())
	} else {
		s.Spec.Replicas = 1
	}
	if r := status.FieldByName("Replicas"); r.IsValid() {
		s.Status.Replicas = int32(r.Int())
	}
	switch sel := spec.FieldByName("Selector"); {
	case !sel.IsValid() || sel.IsNil():
	case sel.Kind() == reflect.Map: // a ReplicationController's
		s.Status.Selector = labels.SelectorFromSet(sel.Interface().(map[string]string)).String()
	default:
		if ls, err := metav1.LabelSelectorAsSelector(sel.Interface().(*metav1.LabelSelector)); err == nil {
			s.Status.Selector = ls.String()
		}
	}
	return s, nil
}

// applyScale sets spec.replicas of obj (or a custom resource's spec replicas path) from a Scale.
func applyScale(r *Resource, obj runtime.Object, s *autoscalingv1.Scale) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if r.Scale == nil {
			return fmt.Errorf("kind has no scale subresource")
		}
		return unstructured.SetNestedField(u.Object, int64(s.Spec.Replicas), pathFields(r.Scale.SpecReplicas)...)
	}
	f := reflect.ValueOf(obj).Elem().FieldByName("Spec").FieldByName("Replicas")
	if !f.IsValid() || !f.CanSet() {
		return fmt.Errorf("kind has no spec.replicas")
	}
	n := s.Spec.Replicas
	f.Set(reflect.ValueOf(&n))
	return nil
}

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// scaleHandler maps the owners of an object's replicas to and from its Scale's, as kube's scale
// subresources do (managedfields.ScaleHandler). Every version the object's managers wrote in
// maps to the same replicas path (a custom resource's versions share their CRD's scale paths
// here), so no manager's entry is dropped.
func scaleHandler(r *Resource, obj runtime.Object) (*managedfields.ScaleHandler, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	path := fieldpath.MakePathOrDie("spec", "replicas")
	if r.Scale != nil {
		elems := pathFields(r.Scale.SpecReplicas)
		parts := make([]any, len(elems))
		for i, e := range elems {
			parts[i] = e
		}
		if path, err = fieldpath.MakePath(parts...); err != nil {
			return nil, err
		}
	}
	mappings := managedfields.ResourcePathMappings{r.GroupVersion.String(): path}
	for _, e := range acc.GetManagedFields() {
		mappings[e.APIVersion] = path
	}
	return managedfields.NewScaleHandler(acc.GetManagedFields(), r.GroupVersion, mappings), nil
}

// liveScale is current's Scale with its replicas' owners, as unstructured for the scale field
// manager.
func liveScale(r *Resource, current runtime.Object) (*unstructured.Unstructured, *managedfields.ScaleHandler, error) {
	sc, err := toScale(r, current)
	if err != nil {
		return nil, nil, err
	}
	handler, err := scaleHandler(r, current)
	if err != nil {
		return nil, nil, err
	}
	if sc.ManagedFields, err = handler.ToSubresource(); err != nil {
		return nil, nil, err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sc)
	if err != nil {
		return nil, nil, err
	}
	return &unstructured.Unstructured{Object: u}, handler, nil
}

// scaleOwnership records in next, current changed through its scale to sc, who owns its
// replicas: sc's owners when server-side apply computed them, else the write tracked on the
// Scale under manager. Tracking is best effort, as in kube.
func (h *Handler) scaleOwnership(r *Resource, current, next runtime.Object, sc *autoscalingv1.Scale, manager string, applied bool) {
	fms := h.managers()
	live, handler, err := liveScale(r, current)
	if err != nil {
		return
	}
	entries := sc.ManagedFields
	if !applied {
		fm, err := fms.scale()
		if err != nil {
			return
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sc)
		if err != nil {
			return
		}
		changed := &unstructured.Unstructured{Object: u}
		changed.SetManagedFields(live.GetManagedFields())
		if manager == "" {
			manager = "unknown"
		}
		entries = fm.UpdateNoErrors(live, changed, manager).(*unstructured.Unstructured).GetManagedFields()
	}
	parent, err := handler.ToParent(entries)
	if err != nil {
		return
	}
	if acc, err := meta.Accessor(next); err == nil {
		acc.SetManagedFields(parent)
	}
}
