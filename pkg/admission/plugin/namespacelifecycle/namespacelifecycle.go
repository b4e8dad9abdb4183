// Package namespacelifecycle is kube's NamespaceLifecycle admission plugin: no new content in a
// namespace that does not exist or is terminating, and the immortal namespaces.
package namespacelifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

// immortalNamespaces may never be deleted (kube's default set).
var immortalNamespaces = map[string]bool{metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true}

// forceLiveLookupTTL is how long after a namespace's delete was admitted here its state is read
// live rather than from the cache, which may not have seen it terminate yet (kube's 30 s).
const forceLiveLookupTTL = 30 * time.Second

// NamespaceLifecycle is kube's NamespaceLifecycle admission: no new content in a namespace
// that does not exist (404 for the namespace) or is terminating (403), and default,
// kube-system and kube-public are never deleted. It reads namespaces from namespaces' cache
// (core's watch cache where core owns them, a watch-fed copy in the other services) and live
// only when the cache does not have the namespace, or says it is active when this server just
// admitted its deletion.
type NamespaceLifecycle struct {
	namespaces registry.Source

	mu      sync.Mutex
	deleted map[string]time.Time // namespace -> when its delete was admitted here
	now     func() time.Time
}

// New reads namespaces through namespaces.
func New(namespaces registry.Source) *NamespaceLifecycle {
	return &NamespaceLifecycle{namespaces: namespaces, deleted: map[string]time.Time{}, now: time.Now}
}

var namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()

// Admit runs in the mutating phase, first, as in kube.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a admission.Attributes) error {
	op := a.GetOperation()
	if op != admission.Create && op != admission.Update && op != admission.Delete {
		return nil
	}
	if a.GetKind().GroupKind() == namespaceKind {
		if op == admission.Delete {
			if immortalNamespaces[a.GetName()] {
				return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), fmt.Errorf("this namespace may not be deleted"))
			}
			l.markDeleted(a.GetName())
		}
		return nil
	}
	if a.GetNamespace() == "" || op == admission.Delete {
		return nil // cluster-scoped kinds, and deleting content, are always allowed
	}
	ns, err := l.get(ctx, a.GetNamespace())
	if err != nil {
		return err
	}
	if op != admission.Create || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	err = admission.NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace()))
	if st, ok := err.(*apierrors.StatusError); ok && st.ErrStatus.Details != nil {
		st.ErrStatus.Details.Causes = append(st.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.GetNamespace()), Field: "metadata.namespace"})
	}
	return err
}

// get reads the namespace from the cache (Source.Get reads it live when the cache lacks it),
// and live when its delete was admitted here lately but the cache still has it active.
func (l *NamespaceLifecycle) get(ctx context.Context, name string) (*corev1.Namespace, error) {
	r, ok := l.namespaces.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("namespaces are not readable here"))
	}
	obj, err := l.namespaces.Get(ctx, r, "", name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err // the namespace's 404
		}
		return nil, apierrors.NewInternalError(err)
	}
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == corev1.NamespaceActive && l.recentlyDeleted(name) {
		if obj, err = l.namespaces.GetLive(ctx, r, "", name); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, err
			}
			return nil, apierrors.NewInternalError(err)
		}
		ns = obj.(*corev1.Namespace)
	}
	return ns, nil
}

func (l *NamespaceLifecycle) markDeleted(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for n, at := range l.deleted { // a few entries at most: drop the expired ones
		if now.Sub(at) > forceLiveLookupTTL {
			delete(l.deleted, n)
		}
	}
	l.deleted[name] = now
}

func (l *NamespaceLifecycle) recentlyDeleted(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.deleted[name]
	return ok && l.now().Sub(at) <= forceLiveLookupTTL
}
