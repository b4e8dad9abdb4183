// Package app assembles the extensions backend: CRDs and custom resources.
package app

import (
	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/topology"
)

// Service is the extensions backend. It announces its group/version so the chain routes to it;
// it has no resources yet, so every request it gets is "not served".
var Service = backend.Service{Name: topology.Extensions, Served: func() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiextensions.k8s.io", Version: "v1"}}
}}
