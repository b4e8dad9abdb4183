package apps

import (
	"fmt"

	"github.com/apichain/apichain/services/core/builtin/validate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validateWorkloadSelector checks a workload's selector (required, valid, not empty) and that it
// selects its template's pods, then the template, which must restart Always.
func validateWorkloadSelector(kind string, sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		errs = append(errs, validate.LabelSelector(sel, p.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(p.Child("selector"), sel, "empty selector is invalid for "+kind))
		}
	}
	tp := p.Child("template")
	if s, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), sel, "invalid label selector"))
	} else {
		if !s.Empty() && !s.Matches(labels.Set(t.Labels)) {
			errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
		}
		errs = append(errs, validate.PodTemplate(t, tp)...)
	}
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", map[string]string{
			"deployment": "ReplicaSet", "replicaset": "ReplicaSet", "daemonset": "DaemonSet", "statefulset": "StatefulSet"}[kind])))
	}
	return errs
}

func validateDeployment(o runtime.Object) field.ErrorList {
	s := &o.(*appsv1.Deployment).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	validate.NonNegative(&errs, p.Child("replicas"), int64(ptr.Deref(s.Replicas, 0)))
	errs = append(errs, validateWorkloadSelector("deployment", s.Selector, &s.Template, p)...)
	sp := p.Child("strategy")
	switch s.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.Strategy.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(sp.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if ru := s.Strategy.RollingUpdate; ru != nil {
			rp := sp.Child("rollingUpdate")
			errs = append(errs, validate.IntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
			errs = append(errs, validate.IntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
			if validate.IntOrPercentValue(ru.MaxUnavailable) == 0 && validate.IntOrPercentValue(ru.MaxSurge) == 0 {
				errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
			}
			if ru.MaxUnavailable != nil && ru.MaxUnavailable.Type == intstr.String && validate.IntOrPercentValue(ru.MaxUnavailable) > 100 {
				errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "must not be greater than 100%"))
			}
		}
	default:
		errs = append(errs, field.NotSupported(sp, s.Strategy, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	validate.NonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
	if s.RevisionHistoryLimit != nil {
		validate.NonNegative(&errs, p.Child("revisionHistoryLimit"), int64(*s.RevisionHistoryLimit))
	}
	if d := s.ProgressDeadlineSeconds; d != nil {
		validate.NonNegative(&errs, p.Child("progressDeadlineSeconds"), int64(*d))
		if *d <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), d, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateReplicaSet(o runtime.Object) field.ErrorList {
	s := &o.(*appsv1.ReplicaSet).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	validate.NonNegative(&errs, p.Child("replicas"), int64(ptr.Deref(s.Replicas, 0)))
	validate.NonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
	return append(errs, validateWorkloadSelector("replicaset", s.Selector, &s.Template, p)...)
}

func validateDaemonSet(o runtime.Object) field.ErrorList {
	s := &o.(*appsv1.DaemonSet).Spec
	p := field.NewPath("spec")
	errs := validateWorkloadSelector("daemonset", s.Selector, &s.Template, p)
	validate.NonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
	switch s.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType, appsv1.RollingUpdateDaemonSetStrategyType:
	case "":
		errs = append(errs, field.Required(p.Child("updateStrategy", "type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("updateStrategy", "type"), s.UpdateStrategy.Type,
			[]string{string(appsv1.OnDeleteDaemonSetStrategyType), string(appsv1.RollingUpdateDaemonSetStrategyType)}))
	}
	return errs
}

func validateStatefulSet(o runtime.Object) field.ErrorList {
	s := &o.(*appsv1.StatefulSet).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	switch s.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), s.PodManagementPolicy, "must be 'OrderedReady' or 'Parallel'"))
	}
	switch s.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(p.Child("updateStrategy", "rollingUpdate"), s.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := s.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			validate.NonNegative(&errs, p.Child("updateStrategy", "rollingUpdate", "partition"), int64(*ru.Partition))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("updateStrategy"), s.UpdateStrategy, "must be 'RollingUpdate' or 'OnDelete'"))
	}
	validate.NonNegative(&errs, p.Child("replicas"), int64(ptr.Deref(s.Replicas, 0)))
	validate.NonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
	if s.ServiceName != "" {
		errs = append(errs, validate.DNS1123Label(s.ServiceName, p.Child("serviceName"))...)
	}
	// The volume claim templates become volumes of the pods.
	t := s.Template.DeepCopy()
	t.Spec.Hostname, t.Spec.Subdomain = "", ""
	for _, c := range s.VolumeClaimTemplates {
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	return append(errs, validateWorkloadSelector("statefulset", s.Selector, t, p)...)
}

// immutableSelector refuses a change of a workload's selector.
func immutableSelector(sel, old *metav1.LabelSelector) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(sel, old) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), sel, validate.FieldImmutableErrorMsg)}
	}
	return nil
}

// validateStatefulSetUpdate: kube lets only replicas, ordinals, template, updateStrategy,
// persistentVolumeClaimRetentionPolicy and minReadySeconds change.
func validateStatefulSetUpdate(o, old runtime.Object) field.ErrorList {
	s, prev := o.(*appsv1.StatefulSet).Spec, old.(*appsv1.StatefulSet).Spec
	s.Replicas, s.Ordinals, s.Template, s.UpdateStrategy = prev.Replicas, prev.Ordinals, prev.Template, prev.UpdateStrategy
	s.PersistentVolumeClaimRetentionPolicy, s.MinReadySeconds = prev.PersistentVolumeClaimRetentionPolicy, prev.MinReadySeconds
	if !apiequality.Semantic.DeepEqual(s, prev) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}
