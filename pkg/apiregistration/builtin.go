package apiregistration

import "k8s.io/apimachinery/pkg/runtime/schema"

// Priority ranks a group/version in discovery.
type Priority struct {
	Group, Version int32
}

// Builtin is what kube-apiserver 1.37 registers as its own APIServices (read from the
// APIServices of a bare one), for the group/versions apichain's core and extensions serve:
// every one of them is here, and nothing else (core's tests check both ways).
var Builtin = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
}

// CustomResourcePriority is what kube gives the APIService of a CRD's served version.
var CustomResourcePriority = Priority{Group: 1000, Version: 100}

// Name is an APIService's name for a group/version: "<version>.<group>" ("v1." for the
// legacy group).
func Name(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// Automanaged labels: kube's autoregister manages APIServices with this label; "onstart"
// ones (the built-in group/versions) are synced when the aggregator starts, "true" ones
// (CRDs' versions) for as long as their source exists.
const (
	AutomanagedLabel   = "kube-aggregator.kubernetes.io/automanaged"
	AutomanagedOnStart = "onstart"
	AutomanagedTrue    = "true"
)
