// Package match holds what webhook and policy admission share to decide whether a write
// concerns them: the namespace reader and kube's namespaceSelector match, the rule that no
// webhook or policy sees writes of the admission configuration, and the request in the
// versioned form kube's matchers and evaluators read.
package match

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
)

// NamespaceGetter reads a namespace (for namespaceSelector); NotFound when there is none.
type NamespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// Namespace is kube's namespaceSelector match: cluster-scoped objects other than namespaces
// always match; a namespace being written is matched by its new labels, any other object by
// the labels of its namespace, read through namespaces.
func Namespace(ctx context.Context, namespaces NamespaceGetter, h namespace.NamespaceSelectorProvider, a admission.Attributes) (bool, error) {
	if a.GetNamespace() == "" && a.GetResource().Resource != "namespaces" {
		return true, nil
	}
	sel, err := h.GetParsedNamespaceSelector()
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if sel.Empty() {
		return true, nil
	}
	var labels map[string]string
	if a.GetResource().Resource == "namespaces" && a.GetSubresource() == "" && (a.GetOperation() == admission.Create || a.GetOperation() == admission.Update) {
		ns, ok := a.GetObject().(*corev1.Namespace)
		if !ok {
			return false, apierrors.NewInternalError(fmt.Errorf("unexpected namespace object %T", a.GetObject()))
		}
		labels = ns.Labels
	} else {
		name := a.GetNamespace()
		if a.GetResource().Resource == "namespaces" && name == "" {
			name = a.GetName()
		}
		ns, err := namespaces(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, err
			}
			return false, apierrors.NewInternalError(err)
		}
		labels = ns.Labels
	}
	return sel.Matches(labelSet(labels)), nil
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// Versioned is a's request in the form kube's matchers, webhook calls and CEL evaluators take:
// a's own kind and objects, unconverted (each resource is served in one version).
func Versioned(a admission.Attributes) *admission.VersionedAttributes {
	return &admission.VersionedAttributes{Attributes: a, VersionedKind: a.GetKind(),
		VersionedObject: admission.NewLazyObject(a.GetObject()), VersionedOldObject: admission.NewLazyObject(a.GetOldObject())}
}

// Exempt says whether a is a write of the admission configuration itself, which webhooks and
// policies never see (kube's rule, so a broken webhook can always be removed).
func Exempt(a admission.Attributes) bool {
	return rules.IsExemptAdmissionConfigurationResource(a)
}
