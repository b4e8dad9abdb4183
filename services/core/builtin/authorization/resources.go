// Package authorization is the authorization.k8s.io/v1 group as core serves it: its
// create-only reviews (the gateway answers them; core lists them for discovery).
package authorization

import (
	"github.com/apichain/apichain/pkg/registry"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	gv := authorizationv1.SchemeGroupVersion
	return []*registry.Resource{
		registry.NewReview(gv, "localsubjectaccessreviews", "LocalSubjectAccessReview", true, registry.Of[authorizationv1.LocalSubjectAccessReview]()),
		registry.NewReview(gv, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, registry.Of[authorizationv1.SelfSubjectAccessReview]()),
		registry.NewReview(gv, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false, registry.Of[authorizationv1.SelfSubjectRulesReview]()),
		registry.NewReview(gv, "subjectaccessreviews", "SubjectAccessReview", false, registry.Of[authorizationv1.SubjectAccessReview]()),
	}
}
