// Package certificates is the certificates.k8s.io/v1 group as core serves it: CertificateSigningRequests,
// ClusterTrustBundles and PodCertificateRequests.
package certificates

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{certificateSigningRequests(), clusterTrustBundles(), podCertificateRequests()}
}
