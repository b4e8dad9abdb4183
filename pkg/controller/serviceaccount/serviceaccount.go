// Package serviceaccount does in core what kube-controller-manager's serviceaccount and
// root-ca-cert-publisher controllers do: every active namespace has a "default"
// ServiceAccount (made again if deleted) and a "kube-root-ca.crt" ConfigMap holding the
// cluster's CA (kept as published). Pods need the first to be admitted and mount the second.
package serviceaccount

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
)

const (
	// RootCAConfigMap is the ConfigMap published in every namespace.
	RootCAConfigMap   = "kube-root-ca.crt"
	rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Run keeps every active namespace's default ServiceAccount (with accounts: kube's
// serviceaccount-controller) and root CA ConfigMap (with a CA: its
// root-ca-certificate-publisher-controller) until ctx ends: after every write to namespaces or
// service accounts, and every resync (a changed or deleted ConfigMap is put back then). Every
// replica may run it.
func Run(ctx context.Context, c *registry.Client, accounts bool, caPEM []byte, log *slog.Logger, resync time.Duration) {
	ns, ok1 := c.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	sa, ok2 := c.Lookup(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	cm, ok3 := c.Lookup(corev1.SchemeGroupVersion.WithResource("configmaps"))
	if !ok1 || !ok2 || !ok3 || (!accounts && caPEM == nil) {
		return
	}
	ctx = registry.WithFieldManager(ctx, "kube-controller-manager") // the manager kube's objects name
	pass := func(ctx context.Context) error {
		err := ensure(ctx, c, ns, sa, cm, accounts, caPEM)
		if err != nil && ctx.Err() == nil {
			log.Warn("default service accounts", "err", err)
		}
		return err
	}
	controller.Loop(ctx, resync, pass, c.Watch(ctx, sa), c.Watch(ctx, ns))
}

func ensure(ctx context.Context, c *registry.Client, nsR, saR, cmR *registry.Resource, accounts bool, caPEM []byte) error {
	namespaces, err := c.List(ctx, nsR, "", "")
	if err != nil {
		return err
	}
	hasAccount := map[string]bool{}
	if accounts {
		list, err := c.List(ctx, saR, "", "metadata.name=default")
		if err != nil {
			return err
		}
		for _, o := range list {
			hasAccount[o.(*corev1.ServiceAccount).Namespace] = true
		}
	}
	published := map[string]*corev1.ConfigMap{}
	if caPEM != nil {
		maps, err := c.List(ctx, cmR, "", "metadata.name="+RootCAConfigMap)
		if err != nil {
			return err
		}
		for _, o := range maps {
			published[o.(*corev1.ConfigMap).Namespace] = o.(*corev1.ConfigMap)
		}
	}
	for _, o := range namespaces {
		ns := o.(*corev1.Namespace)
		if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
			continue
		}
		if accounts && !hasAccount[ns.Name] {
			err := c.Create(ctx, saR, ns.Name, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}})
			if ignorable(err) != nil {
				return err
			}
		}
		if caPEM == nil {
			continue
		}
		switch current := published[ns.Name]; {
		case current == nil:
			err := c.Create(ctx, cmR, ns.Name, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: ns.Name, Annotations: map[string]string{"kubernetes.io/description": rootCADescription}},
				Data:       map[string]string{"ca.crt": string(caPEM)}})
			if ignorable(err) != nil {
				return err
			}
		case current.Data["ca.crt"] != string(caPEM) || len(current.Data) != 1 || len(current.BinaryData) != 0:
			err := c.Update(ctx, cmR, ns.Name, RootCAConfigMap, "", func(o runtime.Object) {
				m := o.(*corev1.ConfigMap)
				m.Data, m.BinaryData = map[string]string{"ca.crt": string(caPEM)}, nil
			})
			if ignorable(err) != nil {
				return err
			}
		}
	}
	return nil
}

// ignorable drops what another replica, or a namespace going away, explains.
func ignorable(err error) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return err
}
