package app

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/services/gateway/authz"
)

// authorization decides what a user may do: kube's --authorization-mode chain, and with RBAC
// the roles and bindings core serves, kept in a watch-fed cache (rbacSync, nil without RBAC).
type authorization struct {
	authorizer authz.Union
	rbacSync   *authz.Sync
}

func newAuthorization(modes []string, chain *routing.Client, log *slog.Logger) (authorization, error) {
	rbac := &authz.RBAC{}
	authorizer, err := authz.New(modes, rbac)
	if err != nil {
		return authorization{}, fmt.Errorf("--authorization-mode: %w", err)
	}
	a := authorization{authorizer: authorizer}
	if slices.Contains(modes, authz.ModeRBAC) {
		a.rbacSync = authz.NewSync(rbac, chain, log)
	}
	return a, nil
}
