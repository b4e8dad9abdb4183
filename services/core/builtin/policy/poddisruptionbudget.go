// Package policy is the policy/v1 group as core serves it: PodDisruptionBudgets (which
// pods' eviction subresource, in package core, consults).
package policy

import (
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodDisruptionBudgets are policy/v1 PodDisruptionBudgets, the group's one resource.
func PodDisruptionBudgets() *registry.Resource {
	return &registry.Resource{GroupVersion: policyv1.SchemeGroupVersion, Name: "poddisruptionbudgets", SingularName: "poddisruptionbudget",
		Kind: "PodDisruptionBudget", Namespaced: true, ShortNames: []string{"pdb"}, Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[policyv1.PodDisruptionBudget](), NewList: registry.Of[policyv1.PodDisruptionBudgetList](),
		Validate: func(o runtime.Object) field.ErrorList {
			s := o.(*policyv1.PodDisruptionBudget).Spec
			p := field.NewPath("spec")
			var errs field.ErrorList
			if s.MinAvailable != nil && s.MaxUnavailable != nil {
				errs = append(errs, field.Invalid(p, s, "minAvailable and maxUnavailable cannot be both set"))
			}
			for _, f := range []struct {
				name string
				v    *intstr.IntOrString
			}{{"minAvailable", s.MinAvailable}, {"maxUnavailable", s.MaxUnavailable}} {
				if f.v == nil {
					continue
				}
				errs = append(errs, validate.IntOrPercent(f.v, p.Child(f.name))...)
				if f.v.Type == intstr.String && validate.IntOrPercentValue(f.v) > 100 {
					errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be greater than 100%"))
				}
			}
			errs = append(errs, validate.LabelSelector(s.Selector, p.Child("selector"))...)
			if u := s.UnhealthyPodEvictionPolicy; u != nil && *u != policyv1.IfHealthyBudget && *u != policyv1.AlwaysAllow {
				errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *u, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Min Available", "string", "The minimum number of pods that must be available."),
			registry.Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
			registry.Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		},
		Cells: func(o runtime.Object) []any {
			pdb := o.(*policyv1.PodDisruptionBudget)
			minAvailable, maxUnavailable := "N/A", "N/A"
			if pdb.Spec.MinAvailable != nil {
				minAvailable = pdb.Spec.MinAvailable.String()
			}
			if pdb.Spec.MaxUnavailable != nil {
				maxUnavailable = pdb.Spec.MaxUnavailable.String()
			}
			return []any{minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed)}
		},
	}
}
