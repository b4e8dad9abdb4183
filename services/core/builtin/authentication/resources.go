// Package authentication is the authentication.k8s.io/v1 group as core serves it: its
// create-only reviews (the gateway answers them; core lists them for discovery).
package authentication

import (
	"github.com/apichain/apichain/pkg/registry"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	gv := authenticationv1.SchemeGroupVersion
	return []*registry.Resource{
		registry.NewReview(gv, "selfsubjectreviews", "SelfSubjectReview", false, registry.Of[authenticationv1.SelfSubjectReview]()),
		registry.NewReview(gv, "tokenreviews", "TokenReview", false, registry.Of[authenticationv1.TokenReview]()),
	}
}
