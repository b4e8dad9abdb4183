package autoscaling

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// horizontalPodAutoscalers are autoscaling/v2 HorizontalPodAutoscalers.
func horizontalPodAutoscalers() *registry.Resource {
	return &registry.Resource{GroupVersion: autoscalingv2.SchemeGroupVersion, Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler",
		Kind: "HorizontalPodAutoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[autoscalingv2.HorizontalPodAutoscaler](), NewList: registry.Of[autoscalingv2.HorizontalPodAutoscalerList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateHPASpec(&o.(*autoscalingv2.HorizontalPodAutoscaler).Spec, field.NewPath("spec"))
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
			registry.Column("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
			registry.Column("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
			registry.Column("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
			registry.Column("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
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
		errs = append(errs, validate.InvalidEach(rp.Child(f.name), f.v, content.IsPathSegmentName(f.v))...)
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
