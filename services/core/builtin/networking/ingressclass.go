package networking

import (
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ingressClasses are networking.k8s.io/v1 IngressClasses with kube's defaults, validation
// and columns (the default class marked " (default)").
func ingressClasses() *registry.Resource {
	return &registry.Resource{GroupVersion: networkingv1.SchemeGroupVersion, Name: "ingressclasses", SingularName: "ingressclass", Kind: "IngressClass",
		HasSpec: true, New: registry.Of[networkingv1.IngressClass](), NewList: registry.Of[networkingv1.IngressClassList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateIngressClass(o.(*networkingv1.IngressClass)) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			ic, prev := o.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
			var errs field.ErrorList
			if ic.Spec.Controller != prev.Spec.Controller {
				errs = append(errs, field.Invalid(field.NewPath("spec", "controller"), ic.Spec.Controller, validate.FieldImmutableErrorMsg))
			}
			return append(errs, validateIngressClass(ic)...)
		},
		NameCell: registry.MarkedDefault(defaultIngressClassAnnotation),
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Controller", "string", "Controller that is responsible for handling this class"),
			registry.Column("Parameters", "string", "A reference to a resource with additional parameters"),
		},
		Cells: func(o runtime.Object) []any {
			ic := o.(*networkingv1.IngressClass)
			params := "<none>"
			if p := ic.Spec.Parameters; p != nil {
				params = p.Kind
				if p.APIGroup != nil {
					params += "." + *p.APIGroup
				}
				params += "/" + p.Name
			}
			return []any{ic.Spec.Controller, params}
		},
	}
}

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if len(ic.Spec.Controller) > 250 {
		errs = append(errs, field.TooLong(p.Child("controller"), "", 250))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(p.Child("controller"), ic.Spec.Controller)...)
	params := ic.Spec.Parameters
	if params == nil {
		return errs
	}
	q := p.Child("parameters")
	if params.APIGroup != nil {
		errs = append(errs, validate.InvalidEach(q.Child("apiGroup"), *params.APIGroup, validation.IsDNS1123Subdomain(*params.APIGroup))...)
	}
	for _, f := range []struct{ name, value string }{{"kind", params.Kind}, {"name", params.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(q.Child(f.name), ""))
			continue
		}
		errs = append(errs, validate.InvalidEach(q.Child(f.name), f.value, path.IsValidPathSegmentName(f.value))...)
	}
	if params.Scope == nil {
		return append(errs, field.Required(q.Child("scope"), ""))
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(q.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			errs = append(errs, validate.InvalidEach(q.Child("namespace"), *params.Namespace, validation.IsDNS1123Label(*params.Namespace))...)
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(q.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(q.Child("scope"), *params.Scope, []string{"Cluster", "Namespace"}))
	}
	return errs
}

const defaultIngressClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
