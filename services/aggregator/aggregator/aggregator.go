// Package aggregator is the aggregator backend: APIServices and proxying to external API
// servers.
package aggregator

import (
	"log/slog"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
)

// Service is the service name in lifecycle state and logs.
const Service = "aggregator"

// Served lists the group/versions the aggregator owns.
func Served() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiregistration.k8s.io", Version: "v1"}}
}

// New builds the aggregator backend.
func New(opts *backend.Options, log *slog.Logger) (*backend.Backend, error) {
	b, err := backend.New(opts, Served(), log)
	if err != nil {
		return nil, err
	}
	return b, Setup(b)
}

// Setup installs the aggregator's resources and hooks on b.
func Setup(*backend.Backend) error { return nil }
