package scheduling

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the scheduling.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/scheduling/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(pc *schedulingv1.PriorityClass) {
		if pc.PreemptionPolicy == nil {
			pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
		}
	})
}
