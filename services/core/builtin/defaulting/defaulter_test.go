package defaulting

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A type with no defaulted part is not walked at all.
func TestNoPlanForUndefaultedKinds(t *testing.T) {
	if w := planFor(reflect.TypeOf(&corev1.ServiceAccount{}).Elem()); w != nil {
		t.Error("ServiceAccount has a defaulting walk, but nothing in it has defaults")
	}
	if w := planFor(reflect.TypeOf(&appsv1.Deployment{}).Elem()); w == nil {
		t.Error("Deployment has no defaulting walk")
	}
}
