package registry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// SystemNamespaces are the namespaces kube-apiserver creates at start.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// EnsureNamespaces creates the given namespaces if they are missing.
func (h *Handler) EnsureNamespaces(ctx context.Context, names []string) error {
	r, ok := h.set.Load().Lookup(namespacesGVR)
	if !ok {
		return nil
	}
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := h.create(ctx, r, "", ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// Namespaces is kube's namespaces resource: spec.finalizers ["kubernetes"] and phase Active on
// create, Terminating while deleting (the namespace lifecycle controller,
// pkg/controller/namespace, then deletes the content).
func Namespaces() *Resource {
	return &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "namespaces", SingularName: "namespace",
		Kind: "Namespace", ShortNames: []string{"ns"}, Subresources: []string{"finalize", "status"},
		VerbsServed:  []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		ValidateName: apivalidation.ValidateNamespaceName,
		New:          func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		PrepareForCreate: func(_ context.Context, o runtime.Object) {
			ns := o.(*corev1.Namespace)
			ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
			ns.Status.Phase = corev1.NamespaceActive
			labelWithName(ns)
		},
		PrepareForUpdate: func(o, _ runtime.Object) { labelWithName(o.(*corev1.Namespace)) },
		PendingDeletion:  func(o runtime.Object) bool { return len(o.(*corev1.Namespace).Spec.Finalizers) > 0 },
		OnDeletionStart:  func(o runtime.Object) { o.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating },
		FieldLabels: func(o runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
		},
		FieldLabelConversion: SupportedFieldLabels("status.phase", "metadata.name"),
		Columns:              []metav1.TableColumnDefinition{metav1.TableColumnDefinition{Name: "Status", Type: "string", Description: "The status of the namespace"}, AgeColumn},
		Cells: func(o runtime.Object) []any {
			return []any{string(o.(*corev1.Namespace).Status.Phase), AgeCell(o)}
		},
	}
}

// labelWithName sets kubernetes.io/metadata.name to the namespace's name, as kube does on
// every write, so selectors can pick namespaces by name.
func labelWithName(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}
