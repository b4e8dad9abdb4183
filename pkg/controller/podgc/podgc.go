// Package podgc is apichain's pod garbage collector, after kube-controller-manager's: a pod
// bound to a node that does not exist (no kubelet will ever finish it) is marked Failed with a
// DisruptionTarget condition and deleted at once once the node has stayed missing for the
// quarantine; a pod being deleted that never reached a node is deleted at once. Without it a
// pod on a vanished node would stay Terminating and hold its namespace's deletion forever.
package podgc

import (
	"context"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Quarantine is how long a node must stay missing before its pods go (kube's 40 s: a node
// object may be recreated, or be late).
const Quarantine = 40 * time.Second

// Run collects every period until ctx is done, waiting quarantine before it believes a node is
// gone.
func Run(ctx context.Context, c *registry.Client, log *slog.Logger, period, quarantine time.Duration) {
	pods, ok1 := c.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	nodes, ok2 := c.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	if !ok1 || !ok2 {
		return
	}
	gc := &collector{c: c, pods: pods, nodes: nodes, quarantine: quarantine, missing: map[string]time.Time{}, now: time.Now}
	controller.Loop[struct{}](ctx, period, func(ctx context.Context) error {
		err := gc.pass(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("pod garbage collection", "err", err)
		}
		return err
	})
}

type collector struct {
	c           *registry.Client
	pods, nodes *registry.Resource
	quarantine  time.Duration
	// missing says since when each node that pods name has been seen missing.
	missing map[string]time.Time
	now     func() time.Time
}

func (gc *collector) pass(ctx context.Context) error {
	podList, err := gc.c.ListCached(ctx, gc.pods, "")
	if err != nil {
		return err
	}
	nodeList, err := gc.c.ListCached(ctx, gc.nodes, "")
	if err != nil {
		return err
	}
	existing := map[string]bool{}
	for _, o := range nodeList {
		existing[o.(*corev1.Node).Name] = true
	}
	now := gc.now()
	named := map[string]bool{}
	for _, o := range podList {
		p := o.(*corev1.Pod)
		switch {
		case p.Spec.NodeName == "" && p.DeletionTimestamp != nil:
			if err := gc.forceDelete(ctx, p); err != nil {
				return err
			}
		case p.Spec.NodeName != "" && !existing[p.Spec.NodeName]:
			named[p.Spec.NodeName] = true
			since, seen := gc.missing[p.Spec.NodeName]
			if !seen {
				gc.missing[p.Spec.NodeName] = now
				continue
			}
			if now.Sub(since) < gc.quarantine {
				continue
			}
			// Believe the cache only after a read from etcd agrees.
			if _, err := gc.c.Get(ctx, gc.nodes, "", p.Spec.NodeName); !apierrors.IsNotFound(err) {
				if err == nil {
					delete(gc.missing, p.Spec.NodeName)
				}
				continue
			}
			if err := gc.orphaned(ctx, p); err != nil {
				return err
			}
		}
	}
	for node := range gc.missing {
		if !named[node] {
			delete(gc.missing, node)
		}
	}
	return nil
}

// orphaned is kube's markFailedAndDeletePodWithCondition: Failed with DisruptionTarget
// (DeletionByPodGC), then deleted with grace 0.
func (gc *collector) orphaned(ctx context.Context, p *corev1.Pod) error {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		err := gc.c.Update(ctx, gc.pods, p.Namespace, p.Name, "status", func(o runtime.Object) {
			pod := o.(*corev1.Pod)
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ObservedGeneration = pod.Generation
			condition := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation,
				Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: metav1.Now().Rfc3339Copy()}
			for i := range pod.Status.Conditions {
				if pod.Status.Conditions[i].Type == condition.Type {
					pod.Status.Conditions[i] = condition
					return
				}
			}
			pod.Status.Conditions = append(pod.Status.Conditions, condition)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return gc.forceDelete(ctx, p)
}

func (gc *collector) forceDelete(ctx context.Context, p *corev1.Pod) error {
	_, err := gc.c.Delete(ctx, gc.pods, p.Namespace, p.Name, &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another pod of the same name
	}
	return err
}
