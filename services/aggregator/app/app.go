// Package app assembles the aggregator backend: APIServices and proxying to external API
// servers.
package app

import (
	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/topology"
)

// Service is the aggregator backend. It announces its group/version so the chain routes to it;
// it has no resources yet, so every request it gets is "not served".
var Service = backend.Service{Name: topology.Aggregator, Served: func() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiregistration.k8s.io", Version: "v1"}}
}}
