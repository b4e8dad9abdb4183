// Package app assembles the extensions backend: CRDs and custom resources.
package app

import (
	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/topology"
)

// Service is the extensions backend: what it serves and how it is set up.
var Service = backend.Service{Name: topology.Extensions, Served: Served, Setup: Setup}

// Served lists the group/versions extensions owns.
func Served() []*discoveryv1.GroupVersion {
	return []*discoveryv1.GroupVersion{{Group: "apiextensions.k8s.io", Version: "v1"}}
}

// Setup installs the extensions' resources and hooks on b.
func Setup(*backend.Backend) error { return nil }
