// Package builtin is kube's built-in API as core serves it: the type registry and the
// resources of every API group, one package per group (as kube's pkg/registry/<group>), each
// holding its kinds' defaults, validation, field selectors and kubectl columns. The groups
// share the defaulting walker (defaulting) and the field and pod spec checks (validate).
package builtin

import (
	"github.com/apichain/apichain/pkg/admission/configuration"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/apps"
	"github.com/apichain/apichain/services/core/builtin/authentication"
	"github.com/apichain/apichain/services/core/builtin/authorization"
	"github.com/apichain/apichain/services/core/builtin/autoscaling"
	"github.com/apichain/apichain/services/core/builtin/batch"
	"github.com/apichain/apichain/services/core/builtin/certificates"
	"github.com/apichain/apichain/services/core/builtin/coordination"
	"github.com/apichain/apichain/services/core/builtin/core"
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	"github.com/apichain/apichain/services/core/builtin/dra"
	"github.com/apichain/apichain/services/core/builtin/endpointslice"
	"github.com/apichain/apichain/services/core/builtin/events"
	"github.com/apichain/apichain/services/core/builtin/flowcontrol"
	"github.com/apichain/apichain/services/core/builtin/networking"
	"github.com/apichain/apichain/services/core/builtin/node"
	"github.com/apichain/apichain/services/core/builtin/policy"
	"github.com/apichain/apichain/services/core/builtin/rbac"
	"github.com/apichain/apichain/services/core/builtin/scheduling"
	"github.com/apichain/apichain/services/core/builtin/storage"
	"github.com/apichain/apichain/services/core/builtin/storagemigration"
	clientv3 "go.etcd.io/etcd/client/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
)

// NewScheme is core's type registry: the k8s.io/api groups it serves.
func NewScheme() (*registry.Scheme, error) {
	return registry.NewScheme(admissionregistrationv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		certificatesv1.AddToScheme, rbacv1.AddToScheme, flowcontrolv1.AddToScheme, schedulingv1.AddToScheme, nodev1.AddToScheme,
		networkingv1.AddToScheme, policyv1.AddToScheme, resourcev1.AddToScheme, storagev1.AddToScheme, storagemigrationv1.AddToScheme,
		discoveryv1.AddToScheme)
}

// Options are what some resources need from the running backend (nil when core only lists
// what it serves).
type Options struct {
	Escalation *rbac.Escalation      // guards role and binding writes
	Etcd       *clientv3.Client      // probed by componentstatuses
	Services   core.ServiceAllocator // allocates services' cluster IPs and node ports
}

// Resources are the stored resources core serves, the groups in kube's order (the legacy
// group first), every typed kind defaulted by its group's defaults unless it has its own.
func Resources(opts Options) []*registry.Resource {
	budgets := policy.PodDisruptionBudgets()
	var rs []*registry.Resource
	for _, group := range [][]*registry.Resource{
		core.Resources(opts.Etcd, opts.Services, budgets),
		apps.Resources(),
		events.Resources(),
		authentication.Resources(),
		authorization.Resources(),
		rbac.Resources(opts.Escalation),
		configuration.Resources(),
		coordination.Resources(),
		flowcontrol.Resources(),
		scheduling.Resources(),
		node.Resources(),
		networking.Resources(),
		storage.Resources(),
		endpointslice.Resources(),
		autoscaling.Resources(),
		batch.Resources(),
		certificates.Resources(),
		{budgets},
		dra.Resources(),
		storagemigration.Resources(),
	} {
		rs = append(rs, group...)
	}
	for _, r := range rs {
		if r.Default == nil && !r.Review {
			r.Default = defaulting.Set
		}
	}
	return rs
}
