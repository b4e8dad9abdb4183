// Package core is the legacy core/v1 group as core serves it: pods and their actions
// (binding, eviction), services, nodes, namespaces, config maps, secrets, volumes, quotas and
// the rest of /api/v1, with kube's defaults (also those of the core/v1 types every workload
// embeds), validation, field selectors and columns.
package core

import (
	"context"

	"github.com/apichain/apichain/pkg/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceAllocator hands Services their cluster IPs and node ports (servicenet.Allocator).
type ServiceAllocator interface {
	Allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(), error)
	Release(ctx context.Context, obj, old runtime.Object)
}

// Resources are the group's resources in kube's order. etcd is probed by componentstatuses,
// services allocates Services' addresses and ports, and pods' evictions consult budgets.
func Resources(etcd *clientv3.Client, services ServiceAllocator, budgets *registry.Resource) []*registry.Resource {
	v1 := corev1.SchemeGroupVersion
	pods := &registry.Resource{GroupVersion: v1, Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"},
		Categories: []string{"all"}, HasSpec: true,
		// kube's pod status strategy keeps the owners: old kubelets corrupted them.
		ResetStatusMeta: func(next, old metav1.Object) { next.SetOwnerReferences(old.GetOwnerReferences()) },
		// binding, eviction, ephemeralcontainers and resize are served here; the others by the gateway.
		Subresources: []string{"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "resize", "status"},
		New:          registry.Of[corev1.Pod](), NewList: registry.Of[corev1.PodList](), PrepareForCreate: preparePod, Validate: validatePod,
		ValidateUpdate: validatePodUpdate, FieldLabels: podFields, FieldLabelConversion: podFieldLabelConversion, GracefulDelete: podGracefulDelete,
		Merges: podMerges, Columns: podColumns, Cells: podCells}
	podsOf := func() *registry.Resource { return pods }
	pods.Actions = map[string]*registry.Action{"binding": bindingAction(podsOf),
		"eviction": evictionAction(podsOf, func() *registry.Resource { return budgets })}
	return []*registry.Resource{
		{GroupVersion: v1, Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true,
			New: registry.Of[corev1.Binding](), Actions: map[string]*registry.Action{"": bindingAction(podsOf)}},
		componentStatuses(etcd),
		registry.Namespaces(),
		limitRanges(),
		resourceQuotas(),
		persistentVolumes(),
		persistentVolumeClaims(),
		podTemplates(),
		replicationControllers(),
		{GroupVersion: v1, Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true,
			ShortNames: []string{"cm"}, New: registry.Of[corev1.ConfigMap](), NewList: registry.Of[corev1.ConfigMapList](),
			Validate: validateConfigMap, ValidateUpdate: validateConfigMapUpdate, Columns: configMapColumns, Cells: configMapCells},
		{GroupVersion: v1, Name: "secrets", SingularName: "secret", Kind: "Secret", Namespaced: true,
			New: registry.Of[corev1.Secret](), NewList: registry.Of[corev1.SecretList](),
			Validate: validateSecret, ValidateUpdate: validateSecretUpdate, FieldLabels: secretFields, FieldLabelConversion: secretFieldLabels,
			Columns: secretColumns, Cells: secretCells},
		{GroupVersion: v1, Name: "serviceaccounts", SingularName: "serviceaccount", Kind: "ServiceAccount", Namespaced: true,
			ShortNames: []string{"sa"}, Subresources: []string{"token"}, New: registry.Of[corev1.ServiceAccount](), NewList: registry.Of[corev1.ServiceAccountList](),
			Columns: serviceAccountColumns, Cells: serviceAccountCells},
		{GroupVersion: v1, Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"},
			New: registry.Of[corev1.Event](), NewList: registry.Of[corev1.EventList](), FieldLabels: EventFields,
			FieldLabelConversion: eventFieldLabels},
		{GroupVersion: v1, Name: "endpoints", SingularName: "endpoints", Kind: "Endpoints", Namespaced: true, ShortNames: []string{"ep"},
			New: registry.Of[corev1.Endpoints](), NewList: registry.Of[corev1.EndpointsList]()},
		servicesResource(services),
		pods,
		{GroupVersion: v1, Name: "nodes", SingularName: "node", Kind: "Node", ShortNames: []string{"no"},
			Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, New: registry.Of[corev1.Node](), NewList: registry.Of[corev1.NodeList](),
			FieldLabels: nodeFields, FieldLabelConversion: nodeFieldLabels,
			Columns: nodeColumns, Cells: nodeCells},
	}
}
