package authz

import (
	"errors"
	"sync/atomic"

	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RBAC authorizes by the newest Policy it was given; until the first, it has no opinion.
type RBAC struct {
	policy atomic.Pointer[rbac.Policy]
}

// Set makes p the policy every later decision uses.
func (r *RBAC) Set(p *rbac.Policy) { r.policy.Store(p) }

// Synced reports whether a policy was set.
func (r *RBAC) Synced() bool { return r.policy.Load() != nil }

// Authorize decides by the current policy.
func (r *RBAC) Authorize(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
	p := r.policy.Load()
	if p == nil {
		return false, "RBAC: the authorization cache has not synced"
	}
	return p.Authorize(u, info)
}

// ErrNotSynced is Rules' answer before the first policy.
var ErrNotSynced = errors.New("the RBAC authorization cache has not synced")

// Rules lists the rules that apply to u in namespace by the current policy.
func (r *RBAC) Rules(u *user.User, namespace string) ([]rbacv1.PolicyRule, error) {
	p := r.policy.Load()
	if p == nil {
		return nil, ErrNotSynced
	}
	return p.Rules(u, namespace)
}
