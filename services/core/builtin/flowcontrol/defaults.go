package flowcontrol

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// kube 1.37's defaulting functions for the flowcontrol.apiserver.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/flowcontrol/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(s *flowcontrolv1.FlowSchemaSpec) {
		if s.MatchingPrecedence == 0 {
			s.MatchingPrecedence = 1000
		}
	})
	defaulting.Register(func(e *flowcontrolv1.ExemptPriorityLevelConfiguration) {
		defaulting.Int32(&e.NominalConcurrencyShares, 0)
		defaulting.Int32(&e.LendablePercent, 0)
	})
	defaulting.Register(func(l *flowcontrolv1.LimitedPriorityLevelConfiguration) {
		defaulting.Int32(&l.NominalConcurrencyShares, 30)
		defaulting.Int32(&l.LendablePercent, 0)
	})
	defaulting.Register(func(q *flowcontrolv1.QueuingConfiguration) {
		for _, f := range []struct {
			v   *int32
			def int32
		}{{&q.HandSize, 8}, {&q.Queues, 64}, {&q.QueueLengthLimit, 50}} {
			if *f.v == 0 {
				*f.v = f.def
			}
		}
	})
}
