package autoscaling

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the autoscaling types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/autoscaling/v2/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(h *autoscalingv1.HorizontalPodAutoscaler) { defaulting.Int32(&h.Spec.MinReplicas, 1) })
	defaulting.Register(func(h *autoscalingv2.HorizontalPodAutoscaler) { defaultHPA(h) })
}

// defaultHPA is autoscaling/v2's defaulting: one replica at least, 80% CPU when no metric is
// given, and the scaling rules' gaps filled from kube's default behavior.
func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	defaulting.Int32(&h.Spec.MinReplicas, 1)
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = fillScalingRules(b.ScaleUp, &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
		b.ScaleDown = fillScalingRules(b.ScaleDown, &autoscalingv2.HPAScalingRules{
			SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
	}
}

func fillScalingRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}
