// Package app assembles the aggregator backend: APIServices and proxying to external API
// servers.
package app

import (
	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/topology"
)

// Service is the aggregator backend: what it serves and how it is set up.
var Service = backend.Service{Name: topology.Aggregator, Served: Served, Setup: Setup}

// Served lists the group/versions the aggregator owns.
func Served() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiregistration.k8s.io", Version: "v1"}}
}

// Setup installs the aggregator's resources and hooks on b.
func Setup(*backend.Backend) error { return nil }
