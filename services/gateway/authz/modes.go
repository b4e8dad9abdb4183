package authz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The --authorization-mode values apichain has.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeRBAC        = "RBAC"
)

// Modes are the authorization modes apichain supports, in the order kube lists them.
var Modes = []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeRBAC}

// Union is kube's chain of --authorization-mode authorizers: the first that allows wins;
// when none does, the request is denied with their reasons.
type Union []Authorizer

// Authorize asks each in turn.
func (u Union) Authorize(usr *user.User, info *requestinfo.RequestInfo) (bool, string) {
	var reasons []string
	for _, a := range u {
		ok, reason := a.Authorize(usr, info)
		if ok {
			return true, reason
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return false, strings.Join(reasons, "\n")
}

// PrivilegedGroup allows members of system:masters everything; kube puts it before every
// mode.
type PrivilegedGroup struct{}

// Authorize allows system:masters.
func (PrivilegedGroup) Authorize(u *user.User, _ *requestinfo.RequestInfo) (bool, string) {
	return slices.Contains(u.Groups, user.SystemPrivilegedGroup), ""
}

// Delegators allows apichain's backends (user.BackendsGroup) what kube's components are
// bound to system:auth-delegator for: creating TokenReviews and SubjectAccessReviews, so their
// metrics endpoints can review callers as kube's components do. It is built in, as
// system:masters is, so the cluster's RBAC objects stay kube's.
type Delegators struct{}

// Authorize allows the two reviews to the backends' group.
func (Delegators) Authorize(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	if !slices.Contains(u.Groups, user.BackendsGroup) || !info.IsResourceRequest || info.Verb != "create" ||
		info.Namespace != "" || info.Subresource != "" || info.Name != "" {
		return false, ""
	}
	review := (info.APIGroup == "authentication.k8s.io" && info.Resource == "tokenreviews") ||
		(info.APIGroup == "authorization.k8s.io" && info.Resource == "subjectaccessreviews")
	return review, ""
}

// AlwaysDeny allows nothing.
type AlwaysDeny struct{}

// Authorize denies.
func (AlwaysDeny) Authorize(*user.User, *requestinfo.RequestInfo) (bool, string) { return false, "" }

// New builds the authorizer for modes, as --authorization-mode lists them: system:masters
// and the backends' reviews first, then each mode in order. rbac serves the RBAC mode.
func New(modes []string, rbac *RBAC) (Union, error) {
	if len(modes) == 0 {
		return nil, fmt.Errorf("at least one authorization mode must be passed")
	}
	out := Union{PrivilegedGroup{}, Delegators{}}
	seen := map[string]bool{}
	for _, m := range modes {
		if seen[m] {
			return nil, fmt.Errorf("authorization-mode %q has mode specified more than once", m)
		}
		seen[m] = true
		switch m {
		case ModeAlwaysAllow:
			out = append(out, AlwaysAllow{})
		case ModeAlwaysDeny:
			out = append(out, AlwaysDeny{})
		case ModeRBAC:
			out = append(out, rbac)
		default:
			return nil, fmt.Errorf("authorization-mode %q is not supported; supported modes: %s", m, strings.Join(Modes, ","))
		}
	}
	return out, nil
}

// allRules is what a superuser, or AlwaysAllow, may do.
var allRules = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// RulesFor lists what usr may do in namespace by each authorizer, as kube's
// SelfSubjectRulesReview reports it; the error says which rules could not be resolved.
func (u Union) RulesFor(usr *user.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	for _, a := range u {
		switch a := a.(type) {
		case PrivilegedGroup:
			if ok, _ := a.Authorize(usr, nil); ok {
				rules = append(rules, allRules...)
			}
		case AlwaysAllow:
			rules = append(rules, allRules...)
		case *RBAC:
			r, err := a.Rules(usr, namespace)
			rules = append(rules, r...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return rules, utilerrors.NewAggregate(errs)
}
