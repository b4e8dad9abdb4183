package registry

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
