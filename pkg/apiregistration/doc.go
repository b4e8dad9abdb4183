// +k8s:deepcopy-gen=package

// Package apiregistration holds the wire types of apiregistration.k8s.io/v1, the APIService
// objects the aggregator serves: field for field what kube's aggregator reads and writes (JSON
// names, OpenAPI model names), as apichain's own Go types. k8s.io/api has no such types, and
// the server machinery that does (k8s.io/kube-aggregator) is not a dependency apichain takes.
// Their deep copies are generated (make generate).
package apiregistration
