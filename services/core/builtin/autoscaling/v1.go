package autoscaling

import (
	"encoding/json"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// autoscaling/v1 HorizontalPodAutoscalers are the v2 objects (stored as v2, as kube stores
// them) seen through kube's v1 conversion: the CPU utilization target is the v1 field, and
// whatever else v2 holds (other metrics, current metrics, conditions, behavior) travels in
// kube's round-trip annotations, in kube's formats.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

var hpaRoundTrip = []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation}

func horizontalPodAutoscalersV1(v2 *registry.Resource) *registry.Resource {
	toV2 := func(o runtime.Object) *autoscalingv2.HorizontalPodAutoscaler {
		return hpaToV2(o.(*autoscalingv1.HorizontalPodAutoscaler))
	}
	return &registry.Resource{GroupVersion: autoscalingv1.SchemeGroupVersion, Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler",
		Kind: "HorizontalPodAutoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[autoscalingv1.HorizontalPodAutoscaler](), NewList: registry.Of[autoscalingv1.HorizontalPodAutoscalerList](),
		Convert: &registry.Conversion{Stored: autoscalingv2.SchemeGroupVersion, NewStored: registry.Of[autoscalingv2.HorizontalPodAutoscaler](),
			ToStored: func(o runtime.Object) runtime.Object { return toV2(o) },
			FromStored: func(s runtime.Object) runtime.Object {
				h := s.(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
				defaulting.Set(h) // kube defaults what it reads, as v2, before converting
				return hpaToV1(h)
			}},
		Validate: func(o runtime.Object) field.ErrorList { return validateHPASpec(&toV2(o).Spec, field.NewPath("spec")) },
		Columns:  v2.Columns,
		Cells:    func(o runtime.Object) []any { return v2.Cells(toV2(o)) },
	}
}

// hpaToV1 is kube's conversion of a v2 autoscaler to v1.
func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy()}
	dropRoundTrip(&out.ObjectMeta)
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptr.To(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		others = append(others, metricToV1(m))
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas}
	var current []autoscalingv1.MetricStatus
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptr.To(*m.Resource.Current.AverageUtilization)
		}
		current = append(current, metricStatusToV1(m))
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	for _, c := range in.Status.Conditions {
		conditions = append(conditions, autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	annotate := func(key string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(data)
	}
	if len(others) > 0 {
		annotate(hpaMetricsAnnotation, others)
	}
	if len(current) > 0 {
		annotate(hpaCurrentMetricsAnnotation, current)
	}
	if b := in.Spec.Behavior; b != nil {
		annotate(hpaBehaviorAnnotation, behaviorJSON{ScaleUp: rulesOf(b.ScaleUp), ScaleDown: rulesOf(b.ScaleDown)})
	}
	if len(conditions) > 0 {
		annotate(hpaConditionsAnnotation, conditions)
	}
	return out
}

// hpaToV2 is kube's conversion of a v1 autoscaler to v2: the round-trip annotations are read
// back, and an autoscaler with no metric at all targets 80% CPU.
func hpaToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy()}
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas}
	var others []autoscalingv1.MetricSpec
	if v, ok := in.Annotations[hpaMetricsAnnotation]; ok && json.Unmarshal([]byte(v), &others) == nil {
		for _, m := range others {
			out.Spec.Metrics = append(out.Spec.Metrics, metricToV2(m))
		}
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, cpuUtilization(*in.Spec.TargetCPUUtilizationPercentage))
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(80)}
	}
	if v, ok := in.Annotations[hpaBehaviorAnnotation]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior // kube's format differs only in letter case
		if json.Unmarshal([]byte(v), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &b
		}
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas}
	var current []autoscalingv1.MetricStatus
	if v, ok := in.Annotations[hpaCurrentMetricsAnnotation]; ok && json.Unmarshal([]byte(v), &current) == nil {
		for _, m := range current {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(m))
		}
	} else if u := in.Status.CurrentCPUUtilizationPercentage; u != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(*u)}}}}
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	if v, ok := in.Annotations[hpaConditionsAnnotation]; ok && json.Unmarshal([]byte(v), &conditions) == nil {
		for _, c := range conditions {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
				Reason: c.Reason, Message: c.Message})
		}
	}
	dropRoundTrip(&out.ObjectMeta)
	return out
}

func dropRoundTrip(m *metav1.ObjectMeta) {
	for _, k := range hpaRoundTrip {
		delete(m.Annotations, k)
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent)}}}
}

// behaviorJSON is kube's behavior annotation: its internal type, without json tags.
type behaviorJSON struct {
	ScaleUp   *rulesJSON
	ScaleDown *rulesJSON
}

type rulesJSON struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []policyJSON
	Tolerance                  *resource.Quantity
}

type policyJSON struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func rulesOf(r *autoscalingv2.HPAScalingRules) *rulesJSON {
	if r == nil {
		return nil
	}
	out := &rulesJSON{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, policyJSON{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func metricToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		o := &autoscalingv1.ObjectMetricSource{Target: autoscalingv1.CrossVersionObjectReference{Kind: m.Object.DescribedObject.Kind,
			Name: m.Object.DescribedObject.Name, APIVersion: m.Object.DescribedObject.APIVersion},
			MetricName: m.Object.Metric.Name, Selector: m.Object.Metric.Selector, AverageValue: m.Object.Target.AverageValue}
		if v := m.Object.Target.Value; v != nil {
			o.TargetValue = *v
		}
		out.Object = o
	case m.Pods != nil:
		p := &autoscalingv1.PodsMetricSource{MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector}
		if v := m.Pods.Target.AverageValue; v != nil {
			p.TargetAverageValue = *v
		}
		out.Pods = p
	case m.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: m.Resource.Name, TargetAverageUtilization: m.Resource.Target.AverageUtilization,
			TargetAverageValue: m.Resource.Target.AverageValue}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			TargetAverageUtilization: m.ContainerResource.Target.AverageUtilization, TargetAverageValue: m.ContainerResource.Target.AverageValue}
	case m.External != nil:
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: m.External.Metric.Name, MetricSelector: m.External.Metric.Selector,
			TargetValue: m.External.Target.Value, TargetAverageValue: m.External.Target.AverageValue}
	}
	return out
}

func metricToV2(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		typ := autoscalingv2.ValueMetricType
		if m.Object.AverageValue != nil {
			typ = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: m.Object.Target.Kind, Name: m.Object.Target.Name, APIVersion: m.Object.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: m.Object.MetricName, Selector: m.Object.Selector},
			Target:          autoscalingv2.MetricTarget{Type: typ, Value: ptr.To(m.Object.TargetValue), AverageValue: m.Object.AverageValue}}
	case m.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: m.Pods.MetricName, Selector: m.Pods.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(m.Pods.TargetAverageValue)}}
	case m.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: m.Resource.Name, Target: resourceTargetV2(m.Resource.TargetAverageUtilization, m.Resource.TargetAverageValue)}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			Target: resourceTargetV2(m.ContainerResource.TargetAverageUtilization, m.ContainerResource.TargetAverageValue)}
	case m.External != nil:
		typ := autoscalingv2.ValueMetricType
		if m.External.TargetValue == nil {
			typ = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: m.External.MetricName, Selector: m.External.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: typ, Value: m.External.TargetValue, AverageValue: m.External.TargetAverageValue}}
	}
	return out
}

func resourceTargetV2(utilization *int32, average *resource.Quantity) autoscalingv2.MetricTarget {
	typ := autoscalingv2.UtilizationMetricType
	if utilization == nil {
		typ = autoscalingv2.AverageValueMetricType
	}
	return autoscalingv2.MetricTarget{Type: typ, AverageUtilization: utilization, AverageValue: average}
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	deref := func(q *resource.Quantity) resource.Quantity {
		if q == nil {
			return resource.Quantity{}
		}
		return *q
	}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv1.ObjectMetricStatus{Target: autoscalingv1.CrossVersionObjectReference{Kind: m.Object.DescribedObject.Kind,
			Name: m.Object.DescribedObject.Name, APIVersion: m.Object.DescribedObject.APIVersion}, MetricName: m.Object.Metric.Name,
			Selector: m.Object.Metric.Selector, CurrentValue: deref(m.Object.Current.Value), AverageValue: m.Object.Current.AverageValue}
	case m.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector,
			CurrentAverageValue: deref(m.Pods.Current.AverageValue)}
	case m.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: m.Resource.Name, CurrentAverageUtilization: m.Resource.Current.AverageUtilization,
			CurrentAverageValue: deref(m.Resource.Current.AverageValue)}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			CurrentAverageUtilization: m.ContainerResource.Current.AverageUtilization, CurrentAverageValue: deref(m.ContainerResource.Current.AverageValue)}
	case m.External != nil:
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: m.External.Metric.Name, MetricSelector: m.External.Metric.Selector,
			CurrentValue: deref(m.External.Current.Value), CurrentAverageValue: m.External.Current.AverageValue}
	}
	return out
}

func metricStatusToV2(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv2.ObjectMetricStatus{DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: m.Object.Target.Kind,
			Name: m.Object.Target.Name, APIVersion: m.Object.Target.APIVersion}, Metric: autoscalingv2.MetricIdentifier{Name: m.Object.MetricName, Selector: m.Object.Selector},
			Current: autoscalingv2.MetricValueStatus{Value: ptr.To(m.Object.CurrentValue), AverageValue: m.Object.AverageValue}}
	case m.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: m.Pods.MetricName, Selector: m.Pods.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(m.Pods.CurrentAverageValue)}}
	case m.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name,
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(m.Resource.CurrentAverageValue), AverageUtilization: m.Resource.CurrentAverageUtilization}}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(m.ContainerResource.CurrentAverageValue), AverageUtilization: m.ContainerResource.CurrentAverageUtilization}}
	case m.External != nil:
		out.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: m.External.MetricName, Selector: m.External.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptr.To(m.External.CurrentValue), AverageValue: m.External.CurrentAverageValue}}
	}
	return out
}
