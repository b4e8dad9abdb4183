package networking

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the networking.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/networking/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(p *networkingv1.NetworkPolicyPort) {
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	})
	defaulting.Register(func(np *networkingv1.NetworkPolicy) {
		if len(np.Spec.PolicyTypes) == 0 {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(np.Spec.Egress) != 0 {
				np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
			}
		}
	})
	defaulting.Register(func(ic *networkingv1.IngressClass) {
		if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
			p.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
		}
	})
}
