// Package builtin is kube's built-in API as core serves it: the resources, and each kind's
// defaulting, validation, field selectors and kubectl columns.
package builtin

import (
	"context"
	"strconv"
	"strings"

	"github.com/apichain/apichain/pkg/admission"
	"github.com/apichain/apichain/pkg/registry"
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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NewScheme is core's type registry: the k8s.io/api groups it serves.
func NewScheme() (*registry.Scheme, error) {
	return registry.NewScheme(admissionregistrationv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		certificatesv1.AddToScheme, rbacv1.AddToScheme, flowcontrolv1.AddToScheme, schedulingv1.AddToScheme, nodev1.AddToScheme,
		networkingv1.AddToScheme, policyv1.AddToScheme, resourcev1.AddToScheme, storagev1.AddToScheme, storagemigrationv1.AddToScheme,
		discoveryv1.AddToScheme)
}

func obj[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// Resources are the stored resources core serves, legacy group first, in kube's order; esc
// guards role and binding writes.
func Resources(opts Options) []*registry.Resource {
	esc := opts.Escalation
	v1 := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	rbac := rbacv1.SchemeGroupVersion
	pods := &registry.Resource{GroupVersion: v1, Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"},
		Categories: []string{"all"}, HasSpec: true,
		// binding, eviction, ephemeralcontainers and resize are served here; the others by the gateway.
		Subresources: []string{"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "resize", "status"},
		New:          obj[corev1.Pod](), NewList: obj[corev1.PodList](), PrepareForCreate: preparePod, Validate: validatePod,
		ValidateUpdate: validatePodUpdate, FieldLabels: podFields, GracefulDelete: podGracefulDelete,
		Merges: podMerges, Columns: podColumns, Cells: podCells}
	podsOf := func() *registry.Resource { return pods }
	budgets := podDisruptionBudgets()
	hpa := horizontalPodAutoscalers()
	pods.Actions = map[string]*registry.Action{"binding": bindingAction(podsOf),
		"eviction": evictionAction(podsOf, func() *registry.Resource { return budgets })}
	return withDefaults(append(append([]*registry.Resource{
		{GroupVersion: v1, Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true,
			New: obj[corev1.Binding](), Actions: map[string]*registry.Action{"": bindingAction(podsOf)}},
		componentStatuses(opts.Etcd),
		registry.Namespaces(),
		limitRanges(),
		resourceQuotas(),
		persistentVolumes(),
		persistentVolumeClaims(),
		podTemplates(),
		replicationControllers(),
		{GroupVersion: v1, Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true,
			ShortNames: []string{"cm"}, New: obj[corev1.ConfigMap](), NewList: obj[corev1.ConfigMapList](),
			Validate: validateConfigMap, ValidateUpdate: validateConfigMapUpdate, Columns: configMapColumns, Cells: configMapCells},
		{GroupVersion: v1, Name: "secrets", SingularName: "secret", Kind: "Secret", Namespaced: true,
			New: obj[corev1.Secret](), NewList: obj[corev1.SecretList](),
			Validate: validateSecret, ValidateUpdate: validateSecretUpdate, FieldLabels: secretFields,
			Columns: secretColumns, Cells: secretCells},
		{GroupVersion: v1, Name: "serviceaccounts", SingularName: "serviceaccount", Kind: "ServiceAccount", Namespaced: true,
			ShortNames: []string{"sa"}, Subresources: []string{"token"}, New: obj[corev1.ServiceAccount](), NewList: obj[corev1.ServiceAccountList](),
			Columns: serviceAccountColumns, Cells: serviceAccountCells},
		{GroupVersion: v1, Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"},
			New: obj[corev1.Event](), NewList: obj[corev1.EventList](), FieldLabels: eventFields},
		{GroupVersion: v1, Name: "endpoints", SingularName: "endpoints", Kind: "Endpoints", Namespaced: true, ShortNames: []string{"ep"},
			New: obj[corev1.Endpoints](), NewList: obj[corev1.EndpointsList]()},
		services(opts.Services),
		pods,
		{GroupVersion: v1, Name: "nodes", SingularName: "node", Kind: "Node", ShortNames: []string{"no"},
			Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, New: obj[corev1.Node](), NewList: obj[corev1.NodeList](),
			Columns: nodeColumns, Cells: nodeCells},
		{GroupVersion: apps, Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			New: obj[appsv1.Deployment](), NewList: obj[appsv1.DeploymentList](), Validate: validateDeployment,
			PrepareForUpdate: func(o, old runtime.Object) {
				// kube bumps a deployment's generation on annotation changes too: they are
				// copied to its replica sets.
				d, prev := o.(*appsv1.Deployment), old.(*appsv1.Deployment)
				if d.Generation == prev.Generation && !apiequality.Semantic.DeepEqual(d.Annotations, prev.Annotations) {
					d.Generation++
				}
			},
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector)
			},
			Columns: deploymentColumns, Cells: deploymentCells},
		{GroupVersion: apps, Name: "replicasets", SingularName: "replicaset", Kind: "ReplicaSet", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			New: obj[appsv1.ReplicaSet](), NewList: obj[appsv1.ReplicaSetList](), Validate: validateReplicaSet,
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector)
			},
			Columns: replicaSetColumns, Cells: replicaSetCells},
		{GroupVersion: apps, Name: "statefulsets", SingularName: "statefulset", Kind: "StatefulSet", Namespaced: true,
			ShortNames: []string{"sts"}, Categories: []string{"all"}, Subresources: []string{"scale", "status"}, HasSpec: true,
			New: obj[appsv1.StatefulSet](), NewList: obj[appsv1.StatefulSetList](), Validate: validateStatefulSet,
			ValidateUpdate: validateStatefulSetUpdate, Columns: statefulSetColumns, Cells: statefulSetCells},
		{GroupVersion: apps, Name: "daemonsets", SingularName: "daemonset", Kind: "DaemonSet", Namespaced: true,
			ShortNames: []string{"ds"}, Categories: []string{"all"}, Subresources: []string{"status"}, HasSpec: true,
			New: obj[appsv1.DaemonSet](), NewList: obj[appsv1.DaemonSetList](), Validate: validateDaemonSet,
			PrepareForCreate: func(_ context.Context, o runtime.Object) { setTemplateGeneration(o.(*appsv1.DaemonSet), 1) },
			PrepareForUpdate: func(o, old runtime.Object) {
				d, prev := o.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
				gen, _ := strconv.ParseInt(prev.Annotations[daemonSetTemplateGeneration], 10, 64)
				if !apiequality.Semantic.DeepEqual(d.Spec.Template, prev.Spec.Template) {
					gen++
				}
				setTemplateGeneration(d, gen)
			},
			ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
				return immutableSelector(o.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector)
			},
			Columns: daemonSetColumns, Cells: daemonSetCells},
		{GroupVersion: eventsv1.SchemeGroupVersion, Name: "events", SingularName: "event", Kind: "Event", Namespaced: true,
			ShortNames: []string{"ev"}, New: obj[eventsv1.Event](), NewList: obj[eventsv1.EventList]()},
		review(authenticationv1.SchemeGroupVersion, "selfsubjectreviews", "SelfSubjectReview", false, obj[authenticationv1.SelfSubjectReview]()),
		review(authenticationv1.SchemeGroupVersion, "tokenreviews", "TokenReview", false, obj[authenticationv1.TokenReview]()),
		review(authorizationv1.SchemeGroupVersion, "localsubjectaccessreviews", "LocalSubjectAccessReview", true, obj[authorizationv1.LocalSubjectAccessReview]()),
		review(authorizationv1.SchemeGroupVersion, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, obj[authorizationv1.SelfSubjectAccessReview]()),
		review(authorizationv1.SchemeGroupVersion, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false, obj[authorizationv1.SelfSubjectRulesReview]()),
		review(authorizationv1.SchemeGroupVersion, "subjectaccessreviews", "SubjectAccessReview", false, obj[authorizationv1.SubjectAccessReview]()),
		{GroupVersion: rbac, Name: "clusterrolebindings", SingularName: "clusterrolebinding", Kind: "ClusterRoleBinding",
			ValidateName: rbacName, New: obj[rbacv1.ClusterRoleBinding](), NewList: obj[rbacv1.ClusterRoleBindingList](),
			Validate: validateClusterRoleBinding, ValidateUpdate: validateClusterRoleBindingUpdate,
			AuthorizeWrite: esc.clusterRoleBinding, Columns: bindingColumns, Cells: clusterRoleBindingCells},
		{GroupVersion: rbac, Name: "clusterroles", SingularName: "clusterrole", Kind: "ClusterRole",
			ValidateName: rbacName, New: obj[rbacv1.ClusterRole](), NewList: obj[rbacv1.ClusterRoleList](),
			Validate: validateClusterRole, AuthorizeWrite: esc.clusterRole, Columns: roleColumns, Cells: roleCells},
		{GroupVersion: rbac, Name: "rolebindings", SingularName: "rolebinding", Kind: "RoleBinding", Namespaced: true,
			ValidateName: rbacName, New: obj[rbacv1.RoleBinding](), NewList: obj[rbacv1.RoleBindingList](),
			Validate: validateRoleBinding, ValidateUpdate: validateRoleBindingUpdate,
			AuthorizeWrite: esc.roleBinding, Columns: bindingColumns, Cells: roleBindingCells},
		{GroupVersion: rbac, Name: "roles", SingularName: "role", Kind: "Role", Namespaced: true,
			ValidateName: rbacName, New: obj[rbacv1.Role](), NewList: obj[rbacv1.RoleList](),
			Validate: validateRole, AuthorizeWrite: esc.role, Columns: roleColumns, Cells: roleCells},
	}, admission.ConfigurationResources()...), []*registry.Resource{
		{GroupVersion: coordinationv1.SchemeGroupVersion, Name: "leases", SingularName: "lease", Kind: "Lease", Namespaced: true,
			HasSpec: true, NoGeneration: true, New: obj[coordinationv1.Lease](), NewList: obj[coordinationv1.LeaseList](),
			Columns: leaseColumns, Cells: leaseCells},
		flowSchemas(),
		priorityLevelConfigurations(),
		priorityClasses(),
		runtimeClasses(),
		ingressClasses(),
		storageClasses(),
		csiDrivers(),
		volumeAttributesClasses(),
		csiStorageCapacities(),
		endpointSlices(),
		controllerRevisions(),
		hpa,
		horizontalPodAutoscalersV1(hpa),
		jobs(),
		cronJobs(),
		certificateSigningRequests(),
		clusterTrustBundles(),
		podCertificateRequests(),
		ingresses(),
		networkPolicies(),
		ipAddresses(),
		serviceCIDRs(),
		budgets,
		deviceClasses(),
		deviceTaintRules(),
		resourceClaims(),
		resourceClaimTemplates(),
		resourceSlices(),
		csiNodes(),
		volumeAttachments(),
		storageVersionMigrations(),
	}...))
}

// Options are what some resources need from the running backend (nil when core only lists
// what it serves).
type Options struct {
	Escalation *Escalation      // guards role and binding writes
	Etcd       *clientv3.Client // probed by componentstatuses
	Services   ServiceAllocator // allocates services' cluster IPs and node ports
}

// ServiceAllocator hands Services their cluster IPs and node ports (servicenet.Allocator).
type ServiceAllocator interface {
	Allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(), error)
	Release(ctx context.Context, obj, old runtime.Object)
}

// daemonSetTemplateGeneration is where apps/v1 keeps the template generation kube counts.
const daemonSetTemplateGeneration = "deprecated.daemonset.template.generation"

func setTemplateGeneration(d *appsv1.DaemonSet, gen int64) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[daemonSetTemplateGeneration] = strconv.FormatInt(gen, 10)
}

// withDefaults gives every typed resource kube's defaulting (defaults.go) unless it has its own.
func withDefaults(rs []*registry.Resource) []*registry.Resource {
	for _, r := range rs {
		if r.Default == nil && !r.Review {
			r.Default = setDefaults
		}
	}
	return rs
}

func review(gv schema.GroupVersion, name, kind string, namespaced bool, newObj func() runtime.Object) *registry.Resource {
	return &registry.Resource{GroupVersion: gv, Name: name, SingularName: strings.ToLower(kind), Kind: kind,
		Namespaced: namespaced, Review: true, New: newObj}
}
