package node

import (
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// runtimeClasses are node.k8s.io/v1 RuntimeClasses with kube's validation and columns.
func runtimeClasses() *registry.Resource {
	return &registry.Resource{GroupVersion: nodev1.SchemeGroupVersion, Name: "runtimeclasses", SingularName: "runtimeclass", Kind: "RuntimeClass",
		New: registry.Of[nodev1.RuntimeClass](), NewList: registry.Of[nodev1.RuntimeClassList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateRuntimeClass(o.(*nodev1.RuntimeClass)) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			rc, prev := o.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
			if rc.Handler != prev.Handler { // kube's declarative validation reports no value
				return field.ErrorList{field.Invalid(field.NewPath("handler"), nil, validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("Handler", "string", "The name of the handler")},
		Cells:   func(o runtime.Object) []any { return []any{o.(*nodev1.RuntimeClass).Handler} },
	}
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	if rc.Handler == "" {
		errs = append(errs, field.Required(field.NewPath("handler"), ""))
	} else {
		errs = append(errs, validate.InvalidEach(field.NewPath("handler"), rc.Handler, validation.IsDNS1123Label(rc.Handler))...)
	}
	if o := rc.Overhead; o != nil {
		p := field.NewPath("overhead", "podFixed")
		for _, k := range validate.SortedNames(o.PodFixed) {
			q := o.PodFixed[corev1.ResourceName(k)]
			errs = append(errs, validate.LimitResourceName(corev1.LimitTypeContainer, corev1.ResourceName(k), p.Key(k))...)
			if q.Cmp(resource.Quantity{}) < 0 {
				errs = append(errs, field.Invalid(p.Key(k), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		errs = append(errs, validate.Tolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return errs
}
