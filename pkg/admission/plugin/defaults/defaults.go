// Package defaults holds kube's small defaulting admission plugins: DefaultTolerationSeconds,
// DefaultStorageClass and DefaultIngressClass (one type here), StorageObjectInUseProtection.
package defaults

import (
	"context"
	"slices"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

// creating reports whether a is the create of the named resource (not a subresource).
func creating(a admission.Attributes, gr string) bool {
	return a.GetOperation() == admission.Create && a.GetSubresource() == "" && a.GetResource().GroupResource().String() == gr
}

// DefaultTolerationSeconds is kube's plugin of that name: a new pod that does not tolerate
// the not-ready and unreachable NoExecute taints tolerates them for 300 seconds.
type DefaultTolerationSeconds struct{}

// Admit adds the tolerations.
func (DefaultTolerationSeconds) Admit(_ context.Context, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok || !creating(a, "pods") {
		return nil
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			tolerated = tolerated || (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
		}
		if !tolerated {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
		}
	}
	return nil
}

// DefaultClasses is kube's DefaultStorageClass and DefaultIngressClass plugins: a new
// PersistentVolumeClaim without a storage class gets the default StorageClass, a new Ingress
// without a class (field or annotation) the default IngressClass; with several defaults, the
// newest. Storage and Ingress say which of the two plugins run.
type DefaultClasses struct {
	client           *registry.Client
	storage, ingress bool
}

// NewDefaultClasses reads the classes through client; storage and ingress enable
// DefaultStorageClass and DefaultIngressClass.
func NewDefaultClasses(client *registry.Client, storage, ingress bool) *DefaultClasses {
	return &DefaultClasses{client: client, storage: storage, ingress: ingress}
}

// Admit sets the class.
func (d *DefaultClasses) Admit(ctx context.Context, a admission.Attributes) error {
	switch o := a.GetObject().(type) {
	case *corev1.PersistentVolumeClaim:
		if !d.storage || !creating(a, "persistentvolumeclaims") || o.Spec.StorageClassName != nil {
			return nil
		}
		name, err := d.newestDefault(ctx, storagev1.SchemeGroupVersion.WithResource("storageclasses"),
			"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
		if err != nil || name == "" {
			return err
		}
		o.Spec.StorageClassName = &name
	case *networkingv1.Ingress:
		if !d.ingress || !creating(a, "ingresses.networking.k8s.io") || o.Spec.IngressClassName != nil || o.Annotations["kubernetes.io/ingress.class"] != "" {
			return nil
		}
		name, err := d.newestDefault(ctx, networkingv1.SchemeGroupVersion.WithResource("ingressclasses"), "ingressclass.kubernetes.io/is-default-class")
		if err != nil || name == "" {
			return err
		}
		o.Spec.IngressClassName = &name
	}
	return nil
}

// newestDefault is the name of the newest class marked default by one of the annotations.
func (d *DefaultClasses) newestDefault(ctx context.Context, gvr schema.GroupVersionResource, annotations ...string) (string, error) {
	r, ok := d.client.Lookup(gvr)
	if !ok {
		return "", nil
	}
	classes, err := d.client.ListCached(ctx, r, "")
	if err != nil {
		return "", err
	}
	var newest metav1.Object
	for _, o := range classes {
		acc, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		for _, a := range annotations {
			if acc.GetAnnotations()[a] == "true" {
				at, best := acc.GetCreationTimestamp().Time, time.Time{}
				if newest != nil {
					best = newest.GetCreationTimestamp().Time
				}
				if newest == nil || at.After(best) || at.Equal(best) && acc.GetName() < newest.GetName() {
					newest = acc
				}
				break
			}
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.GetName(), nil
}

// StorageObjectInUseProtection is kube's plugin of that name: new claims and volumes carry the
// finalizer that keeps them while in use (pkg/controller/volumeprotection removes it).
type StorageObjectInUseProtection struct{}

// Admit adds the finalizer.
func (StorageObjectInUseProtection) Admit(_ context.Context, a admission.Attributes) error {
	var finalizer string
	switch {
	case creating(a, "persistentvolumeclaims"):
		finalizer = "kubernetes.io/pvc-protection"
	case creating(a, "persistentvolumes"):
		finalizer = "kubernetes.io/pv-protection"
	default:
		return nil
	}
	acc, err := meta.Accessor(a.GetObject())
	if err != nil || slices.Contains(acc.GetFinalizers(), finalizer) {
		return nil
	}
	acc.SetFinalizers(append(acc.GetFinalizers(), finalizer))
	return nil
}
