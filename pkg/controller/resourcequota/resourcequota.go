// Package resourcequota does in core what kube-controller-manager's resourcequota controller
// does: each ResourceQuota's status.hard follows its spec and status.used is recounted from
// the objects stored (what admission charged is corrected; what was deleted is released).
package resourcequota

import (
	"context"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"time"

	quotaplugin "github.com/apichain/apichain/pkg/admission/plugin/resourcequota"
	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

// Run recounts after writes (batched over a tenth of a second) and every resync until ctx
// ends. Every replica may run it: a recount is written only over the version it read.
func Run(ctx context.Context, c *registry.Client, log *slog.Logger, resync time.Duration) {
	r, ok := c.Lookup(corev1.SchemeGroupVersion.WithResource("resourcequotas"))
	if !ok {
		return
	}
	reg := quotaplugin.Registry(c)
	ctx = registry.WithFieldManager(ctx, "kube-controller-manager")
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		err := recount(ctx, c, r, reg)
		if err != nil && ctx.Err() == nil {
			log.Warn("resource quota usage", "err", err)
		}
		return err
	}, controller.Settle(ctx, c.Watch(ctx, nil), 100*time.Millisecond)) // a burst of writes lands, then one count
}

func recount(ctx context.Context, c *registry.Client, r *registry.Resource, reg quota.Registry) error {
	objs, err := c.ListCached(ctx, r, "")
	if err != nil {
		return err
	}
	for _, o := range objs {
		q := o.(*corev1.ResourceQuota)
		used, err := quota.CalculateUsage(q.Namespace, q.Spec.Scopes, q.Spec.Hard, reg, q.Spec.ScopeSelector)
		if err != nil {
			return err
		}
		if quota.Equals(q.Status.Hard, q.Spec.Hard) && quota.Equals(q.Status.Used, used) {
			continue
		}
		next := q.DeepCopy()
		next.Status.Hard, next.Status.Used = q.Spec.Hard, used
		if err := c.ReplaceStatus(ctx, r, next); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
