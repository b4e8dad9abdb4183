package validate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateAffinity is kube's: node affinity, then pod affinity and anti-affinity.
func validateAffinity(a *corev1.Affinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution").Child("nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, validateNodeSelectorTerm(term, false, rp.Index(i))...)
			}
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(term.Weight, tp.Child("weight"))...)
			errs = append(errs, validateNodeSelectorTerm(term.Preference, true, tp.Child("preference"))...)
		}
	}
	type podTerms struct {
		name      string
		required  []corev1.PodAffinityTerm
		preferred []corev1.WeightedPodAffinityTerm
	}
	var pod []podTerms
	if pa := a.PodAffinity; pa != nil {
		pod = append(pod, podTerms{"podAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution})
	}
	if pa := a.PodAntiAffinity; pa != nil {
		pod = append(pod, podTerms{"podAntiAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution})
	}
	for _, pa := range pod {
		pp := p.Child(pa.name)
		for i, term := range pa.required {
			errs = append(errs, validatePodAffinityTerm(term, pp.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
		}
		for i, term := range pa.preferred {
			tp := pp.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(term.Weight, tp.Child("weight"))...)
			errs = append(errs, validatePodAffinityTerm(term.PodAffinityTerm, tp.Child("podAffinityTerm"))...)
		}
	}
	return errs
}

func validateWeight(w int32, p *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(p, w, "must be in the range 1-100")}
	}
	return nil
}

// validateNodeSelectorTerm is kube's; a preferred term's values may be any string.
func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, anyValue bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, r := range term.MatchExpressions {
		rp := p.Child("matchExpressions").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(r.Key, rp.Child("key"))...)
		if !anyValue {
			for k, v := range r.Values {
				errs = append(errs, InvalidEach(rp.Child("values").Index(k), v, validation.IsValidLabelValue(v))...)
			}
		}
	}
	for j, r := range term.MatchFields {
		rp := p.Child("matchFields").Index(j)
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.Invalid(rp.Child("operator"), r.Operator, "not a valid selector operator"))
		} else if len(r.Values) != 1 {
			errs = append(errs, field.Required(rp.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
		if r.Key != "metadata.name" { // the one node field kube selects on
			errs = append(errs, field.Invalid(rp.Child("key"), r.Key, "not a valid field selector key"))
			continue
		}
		for k, v := range r.Values {
			errs = append(errs, InvalidEach(rp.Child("values").Index(k), v, apivalidation.NameIsDNSSubdomain(v, false))...)
		}
	}
	return errs
}

// validatePodAffinityTerm is kube's (its matchLabelKeys rules aside).
func validatePodAffinityTerm(t corev1.PodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, LabelSelector(t.LabelSelector, p.Child("labelSelector"))...)
	errs = append(errs, LabelSelector(t.NamespaceSelector, p.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		errs = append(errs, InvalidEach(p.Child("namespace"), ns, apivalidation.ValidateNamespaceName(ns, false))...)
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
}

// validateTopologySpreadConstraints is kube's (its matchLabelKeys rules aside).
func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		cp := p.Index(i)
		errs = append(errs, positive(int64(c.MaxSkew), cp.Child("maxSkew"))...)
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(cp.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(cp.Child("whenUnsatisfiable"), c.WhenUnsatisfiable,
				[]corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, rest := range cs[i+1:] {
			if c.TopologyKey == rest.TopologyKey && c.WhenUnsatisfiable == rest.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(cp.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if m := c.MinDomains; m != nil {
			errs = append(errs, positive(int64(*m), cp.Child("minDomains"))...)
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(cp.Child("minDomains"), m,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, pol := range []struct {
			name string
			v    *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil && *pol.v != corev1.NodeInclusionPolicyHonor && *pol.v != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(cp.Child(pol.name), pol.v, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
			}
		}
		errs = append(errs, LabelSelector(c.LabelSelector, cp.Child("labelSelector"))...)
	}
	return errs
}

// positive is kube's ValidatePositiveField.
func positive(v int64, p *field.Path) field.ErrorList {
	if v <= 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than zero")}
	}
	return nil
}
