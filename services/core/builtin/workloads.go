package builtin

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// podTemplates are v1 PodTemplates.
func podTemplates() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "podtemplates", SingularName: "podtemplate", Kind: "PodTemplate",
		Namespaced: true, NoAgeColumn: true, HasSpec: true, SpecField: "Template",
		New: obj[corev1.PodTemplate](), NewList: obj[corev1.PodTemplateList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validatePodTemplate(&o.(*corev1.PodTemplate).Template, field.NewPath("template"))
		},
		Columns: []metav1.TableColumnDefinition{
			col("Containers", "string", "Names of each container in the template."),
			col("Images", "string", "Images referenced by each container in the template."),
			col("Pod Labels", "string", "The labels for the pod template."),
		},
		Cells: func(o runtime.Object) []any {
			t := o.(*corev1.PodTemplate).Template
			names, images := containerCells(t.Spec.Containers)
			return []any{names, images, labels.FormatLabels(t.Labels)}
		},
	}
}

// replicationControllers are v1 ReplicationControllers, with the scale subresource.
func replicationControllers() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "replicationcontrollers", SingularName: "replicationcontroller",
		Kind: "ReplicationController", Namespaced: true, ShortNames: []string{"rc"}, Categories: []string{"all"},
		Subresources: []string{"scale", "status"}, HasSpec: true,
		New: obj[corev1.ReplicationController](), NewList: obj[corev1.ReplicationControllerList](),
		Validate: func(o runtime.Object) field.ErrorList {
			s := &o.(*corev1.ReplicationController).Spec
			p := field.NewPath("spec")
			var errs field.ErrorList
			nonNegative(&errs, p.Child("replicas"), int64(ptr.Deref(s.Replicas, 0)))
			nonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
			sel := labels.Set(s.Selector).AsSelector()
			if sel.Empty() {
				errs = append(errs, field.Required(p.Child("selector"), ""))
			}
			tp := p.Child("template")
			if s.Template == nil {
				return append(errs, field.Required(tp, ""))
			}
			if !sel.Empty() && !sel.Matches(labels.Set(s.Template.Labels)) {
				errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
			}
			errs = append(errs, validatePodTemplate(s.Template, tp)...)
			if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
				errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), s.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			col("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
			col("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
			col("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
			registry.AgeColumn,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])),
		},
		Cells: func(o runtime.Object) []any {
			rc := o.(*corev1.ReplicationController)
			var cs []corev1.Container
			if rc.Spec.Template != nil {
				cs = rc.Spec.Template.Spec.Containers
			}
			names, images := containerCells(cs)
			return []any{int64(ptr.Deref(rc.Spec.Replicas, 0)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), registry.AgeCell(o),
				names, images, labels.FormatLabels(rc.Spec.Selector)}
		},
	}
}

// podDisruptionBudgets are policy/v1 PodDisruptionBudgets.
func podDisruptionBudgets() *registry.Resource {
	return &registry.Resource{GroupVersion: policyv1.SchemeGroupVersion, Name: "poddisruptionbudgets", SingularName: "poddisruptionbudget",
		Kind: "PodDisruptionBudget", Namespaced: true, ShortNames: []string{"pdb"}, Subresources: []string{"status"}, HasSpec: true,
		New: obj[policyv1.PodDisruptionBudget](), NewList: obj[policyv1.PodDisruptionBudgetList](),
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
				errs = append(errs, validateIntOrPercent(f.v, p.Child(f.name))...)
				if f.v.Type == intstr.String && intOrPercentValue(f.v) > 100 {
					errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be greater than 100%"))
				}
			}
			errs = append(errs, validateLabelSelector(s.Selector, p.Child("selector"))...)
			if u := s.UnhealthyPodEvictionPolicy; u != nil && *u != policyv1.IfHealthyBudget && *u != policyv1.AlwaysAllow {
				errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *u, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			col("Min Available", "string", "The minimum number of pods that must be available."),
			col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
			col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
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

// horizontalPodAutoscalers are autoscaling/v2 HorizontalPodAutoscalers.
func horizontalPodAutoscalers() *registry.Resource {
	return &registry.Resource{GroupVersion: autoscalingv2.SchemeGroupVersion, Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler",
		Kind: "HorizontalPodAutoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: []string{"status"}, HasSpec: true,
		New: obj[autoscalingv2.HorizontalPodAutoscaler](), NewList: obj[autoscalingv2.HorizontalPodAutoscalerList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateHPASpec(&o.(*autoscalingv2.HorizontalPodAutoscaler).Spec, field.NewPath("spec"))
		},
		Columns: []metav1.TableColumnDefinition{
			col("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
			col("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
			col("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
			col("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
			col("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		},
		Cells: func(o runtime.Object) []any {
			h := o.(*autoscalingv2.HorizontalPodAutoscaler)
			minPods := "<unset>"
			if h.Spec.MinReplicas != nil {
				minPods = fmt.Sprint(*h.Spec.MinReplicas)
			}
			return []any{h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
				minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas)}
		},
	}
}

func validateHPASpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), "must be set and greater than 0"))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	rp := p.Child("scaleTargetRef")
	ref := s.ScaleTargetRef
	for _, f := range []struct{ name, v string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.v == "" {
			errs = append(errs, field.Required(rp.Child(f.name), ""))
			continue
		}
		errs = append(errs, invalidEach(rp.Child(f.name), f.v, content.IsPathSegmentName(f.v))...)
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(rp.Child("apiVersion"), ref.APIVersion, err.Error()))
	} else if gv.Group == "" {
		errs = append(errs, field.Invalid(rp.Child("apiVersion"), ref.APIVersion, "apiVersion must specify API group"))
	}
	for i, m := range s.Metrics {
		mp := p.Child("metrics").Index(i)
		switch m.Type {
		case autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType,
			autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		case "":
			errs = append(errs, field.Required(mp.Child("type"), "must specify a metric source type"))
		default:
			errs = append(errs, field.NotSupported(mp.Child("type"), m.Type, []string{"ContainerResource", "External", "Object", "Pods", "Resource"}))
		}
	}
	return errs
}

// hpaTargets is kubectl's TARGETS cell: the first two metrics as current/target.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, s := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, hpaTarget(s, st))
	}
	if len(list) > 2 {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:2], ", "), len(list)-2)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(s autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	var cur *autoscalingv2.MetricValueStatus
	switch s.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if st != nil && st.External != nil {
			cur = &st.External.Current
		}
		return valueTarget(s.External.Target, cur)
	case autoscalingv2.ObjectMetricSourceType:
		if st != nil && st.Object != nil {
			cur = &st.Object.Current
		}
		return valueTarget(s.Object.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		current := "<unknown>"
		if st != nil && st.Pods != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, s.Pods.Target.AverageValue.String())
	case autoscalingv2.ResourceMetricSourceType:
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return resourceTarget(string(s.Resource.Name), s.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return resourceTarget(string(s.ContainerResource.Name), s.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueTarget is an external or object metric's cell: current/target, "(avg)" for an average.
func valueTarget(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
	}
	if cur != nil {
		current = cur.Value.String()
	}
	return fmt.Sprintf("%s/%s", current, target.Value.String())
}

func resourceTarget(name string, target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String())
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	t := "<auto>"
	if target.AverageUtilization != nil {
		t = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, current, t)
}
