package admission

import (
	"context"
	"errors"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Watch keeps w's webhooks those of the stored configurations, from client (which must know
// both configuration resources), until ctx ends; synced is called after the first complete
// read.
func (w *Webhooks) Watch(ctx context.Context, client *registry.Client, synced func()) error {
	mr, ok1 := client.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"))
	vr, ok2 := client.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"))
	if !ok1 || !ok2 {
		return errors.New("webhook admission needs the webhook configuration resources")
	}
	pass := func(ctx context.Context) error {
		ms, err := client.List(ctx, mr, "", "")
		if err != nil {
			return err
		}
		vs, err := client.List(ctx, vr, "", "")
		if err != nil {
			return err
		}
		m := make([]*admissionregistrationv1.MutatingWebhookConfiguration, len(ms))
		for i, o := range ms {
			m[i] = o.(*admissionregistrationv1.MutatingWebhookConfiguration)
		}
		v := make([]*admissionregistrationv1.ValidatingWebhookConfiguration, len(vs))
		for i, o := range vs {
			v[i] = o.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		}
		w.SetConfigurations(m, v)
		if synced != nil {
			synced()
			synced = nil
		}
		return nil
	}
	logged := func(ctx context.Context) error {
		err := pass(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("webhook configurations", "err", err)
		}
		return err
	}
	// One loop per kind, each re-reading both: a write to either takes effect at once.
	go client.Reconcile(ctx, mr, 10*time.Minute, logged)
	go client.Reconcile(ctx, vr, 10*time.Minute, logged)
	return nil
}

// Namespaces reads namespaces for namespaceSelector through client: from the watch cache, and
// from etcd when the cache does not have it yet (a namespace created a moment ago).
func Namespaces(client *registry.Client) NamespaceGetter {
	return func(ctx context.Context, name string) (*corev1.Namespace, error) {
		r, ok := client.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
		if !ok {
			return nil, apierrors.NewInternalError(errors.New("namespaces are not readable here"))
		}
		obj, err := client.Get(ctx, r, "", name)
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.Namespace), nil
	}
}
