package batch

import (
	"math"

	"github.com/apichain/apichain/services/core/builtin/defaulting"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the batch/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/batch/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(j *batchv1.Job) {
		s := &j.Spec
		if s.Completions == nil && s.Parallelism == nil {
			s.Completions = ptr.To[int32](1)
		}
		defaulting.Int32(&s.Parallelism, 1)
		if s.BackoffLimit == nil {
			if s.BackoffLimitPerIndex != nil {
				s.BackoffLimit = ptr.To[int32](math.MaxInt32)
			} else {
				s.BackoffLimit = ptr.To[int32](6)
			}
		}
		if labels := s.Template.Labels; labels != nil && len(j.Labels) == 0 {
			j.Labels = labels
		}
		if s.CompletionMode == nil {
			s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}
		if s.Suspend == nil {
			s.Suspend = ptr.To(false)
		}
		if s.PodReplacementPolicy == nil {
			if s.PodFailurePolicy != nil {
				s.PodReplacementPolicy = ptr.To(batchv1.Failed)
			} else {
				s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
			}
		}
		if s.ManualSelector == nil {
			s.ManualSelector = ptr.To(false)
		}
	})
	defaulting.Register(func(c *batchv1.CronJob) {
		s := &c.Spec
		if s.ConcurrencyPolicy == "" {
			s.ConcurrencyPolicy = batchv1.AllowConcurrent
		}
		if s.Suspend == nil {
			s.Suspend = ptr.To(false)
		}
		defaulting.Int32(&s.SuccessfulJobsHistoryLimit, 3)
		defaulting.Int32(&s.FailedJobsHistoryLimit, 1)
	})
	defaulting.Register(func(p *batchv1.PodFailurePolicyOnPodConditionsPattern) {
		if p.Status == "" {
			p.Status = corev1.ConditionTrue
		}
	})
}
