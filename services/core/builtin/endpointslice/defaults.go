package endpointslice

import (
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// kube 1.37's defaulting functions for the discovery.k8s.io/v1 types (its SetDefaults_* in
// k8s.io/kubernetes/pkg/apis/discovery/v1/defaults.go), with the feature gates at their 1.37 defaults;
// declarative `+default=` markers are applied by the defaulting walker.
func init() {
	defaulting.Register(func(p *discoveryv1.EndpointPort) {
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	})
}
