package registry

import (
	"fmt"
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// toScale is the scale subresource of a kind with spec.replicas, status.replicas and
// spec.selector (the apps workloads).
func toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
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
	if sel := spec.FieldByName("Selector"); sel.IsValid() && !sel.IsNil() {
		ls, err := metav1.LabelSelectorAsSelector(sel.Interface().(*metav1.LabelSelector))
		if err == nil {
			s.Status.Selector = ls.String()
		}
	}
	return s, nil
}

// applyScale sets spec.replicas of obj from a Scale.
func applyScale(obj runtime.Object, s *autoscalingv1.Scale) error {
	r := reflect.ValueOf(obj).Elem().FieldByName("Spec").FieldByName("Replicas")
	if !r.IsValid() || !r.CanSet() {
		return fmt.Errorf("kind has no spec.replicas")
	}
	n := s.Spec.Replicas
	r.Set(reflect.ValueOf(&n))
	return nil
}
