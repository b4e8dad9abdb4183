// Package extensions is the extensions backend: CRDs and custom resources.
package extensions

import (
	"log/slog"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
)

// Service is the service name in lifecycle state and logs.
const Service = "extensions"

// Served lists the group/versions extensions owns.
func Served() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiextensions.k8s.io", Version: "v1"}}
}

// New builds the extensions backend.
func New(opts *backend.Options, log *slog.Logger) (*backend.Backend, error) {
	b, err := backend.New(opts, Served(), log)
	if err != nil {
		return nil, err
	}
	return b, Setup(b)
}

// Setup installs the extensions' resources and hooks on b.
func Setup(*backend.Backend) error { return nil }
