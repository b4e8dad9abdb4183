// Package volumeprotection is apichain's pvc-protection and pv-protection controllers, after
// kube-controller-manager's: a PersistentVolumeClaim being deleted loses its
// kubernetes.io/pvc-protection finalizer (and goes away) once no pod that may still run uses
// it; a PersistentVolume its kubernetes.io/pv-protection finalizer once it is not bound. The
// StorageObjectInUseProtection admission plugin adds the finalizers on create.
package volumeprotection

import (
	"context"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Finalizers kube's plugin adds.
const (
	PVCProtection = "kubernetes.io/pvc-protection"
	PVProtection  = "kubernetes.io/pv-protection"
)

// Run removes the finalizers of claims and volumes being deleted that nothing uses, on every
// change to claims or volumes, every resync, and the changes to pods while a claim waits for
// its pods to go, until ctx is done.
func Run(ctx context.Context, c *registry.Client, log *slog.Logger, resync time.Duration) {
	pvcs, ok1 := c.Lookup(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"))
	pvs, ok2 := c.Lookup(corev1.SchemeGroupVersion.WithResource("persistentvolumes"))
	pods, ok3 := c.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	if !ok1 || !ok2 || !ok3 {
		return
	}
	// A pod write matters only while a claim being deleted is in use.
	var waiting atomic.Bool
	podChanges := controller.Filter(ctx, c.Watch(ctx, pods), func(registry.Change) bool { return waiting.Load() })
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		w, err := pass(ctx, c, pvcs, pvs, pods)
		waiting.Store(w)
		if err != nil && ctx.Err() == nil {
			log.Warn("volume protection", "err", err)
		}
		return err
	}, c.Watch(ctx, pvcs), c.Watch(ctx, pvs), podChanges)
}

// pass unprotects what it may; waiting says a claim being deleted is still in use.
func pass(ctx context.Context, c *registry.Client, pvcs, pvs, pods *registry.Resource) (waiting bool, err error) {
	claims, err := c.List(ctx, pvcs, "", "") // not the cache: a change is reported before the cache may have it
	if err != nil {
		return false, err
	}
	for _, o := range claims {
		pvc := o.(*corev1.PersistentVolumeClaim)
		if pvc.DeletionTimestamp == nil || !slices.Contains(pvc.Finalizers, PVCProtection) {
			continue
		}
		inUse, err := claimInUse(ctx, c, pods, pvc)
		if err != nil {
			return false, err
		}
		waiting = waiting || inUse
		if !inUse {
			if err := unprotect(ctx, c, pvcs, pvc.Namespace, pvc.Name, PVCProtection); err != nil {
				return waiting, err
			}
		}
	}
	volumes, err := c.List(ctx, pvs, "", "")
	if err != nil {
		return waiting, err
	}
	for _, o := range volumes {
		pv := o.(*corev1.PersistentVolume)
		if pv.DeletionTimestamp != nil && slices.Contains(pv.Finalizers, PVProtection) && pv.Status.Phase != corev1.VolumeBound {
			if err := unprotect(ctx, c, pvs, "", pv.Name, PVProtection); err != nil {
				return waiting, err
			}
		}
	}
	return waiting, nil
}

// claimInUse: a pod of the claim's namespace that has not finished mounts it (directly, or
// as the claim of an ephemeral volume).
func claimInUse(ctx context.Context, c *registry.Client, pods *registry.Resource, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	list, err := c.List(ctx, pods, pvc.Namespace, "")
	if err != nil {
		return false, err
	}
	for _, o := range list {
		pod := o.(*corev1.Pod)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name ||
				v.Ephemeral != nil && pod.Name+"-"+v.Name == pvc.Name {
				return true, nil
			}
		}
	}
	return false, nil
}

func unprotect(ctx context.Context, c *registry.Client, r *registry.Resource, namespace, name, finalizer string) error {
	err := c.Update(ctx, r, namespace, name, "", func(o runtime.Object) {
		if acc, ok := o.(interface {
			GetFinalizers() []string
			SetFinalizers([]string)
		}); ok {
			acc.SetFinalizers(slices.DeleteFunc(acc.GetFinalizers(), func(f string) bool { return f == finalizer }))
		}
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
