// Package core is the core backend: /api/v1 and the built-in groups.
package core

import (
	"log/slog"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
)

// Service is the service name in lifecycle state and logs.
const Service = "core"

// Served lists the group/versions core owns, legacy group first.
func Served() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{
		{Version: "v1"},
		{Group: "apps", Version: "v1"},
		{Group: "events.k8s.io", Version: "v1"},
		{Group: "authentication.k8s.io", Version: "v1"},
		{Group: "authorization.k8s.io", Version: "v1"},
		{Group: "coordination.k8s.io", Version: "v1"},
	}
}

// New builds the core backend.
func New(opts *backend.Options, log *slog.Logger) (*backend.Backend, error) {
	b, err := backend.New(opts, Served(), log)
	if err != nil {
		return nil, err
	}
	return b, Setup(b)
}

// Setup installs core's resources and hooks on b.
func Setup(*backend.Backend) error { return nil }
