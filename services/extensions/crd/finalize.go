package crd

import (
	"context"
	"slices"

	"github.com/apichain/apichain/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// finalize deletes the custom resources of a CRD being deleted, as kube's finalizer
// controller does (through their DELETE, so their own finalizers hold them), and once none is
// left removes the cleanup finalizer, which lets the CRD go.
func finalize(ctx context.Context, client *registry.Client, r *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		return nil
	}
	remaining := 0
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		cr, ok := client.Lookup(schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Status.AcceptedNames.Plural})
		if !ok {
			break // never established: nothing was stored
		}
		objs, err := client.List(ctx, cr, "", "")
		if err != nil {
			return err
		}
		for _, o := range objs {
			acc := o.(metav1.Object)
			deleted, err := client.Delete(ctx, cr, acc.GetNamespace(), acc.GetName(), nil)
			if err != nil {
				return err
			}
			if !deleted {
				remaining++
			}
		}
	}
	if remaining > 0 {
		return nil // held by their finalizers: the next pass looks again
	}
	return client.Update(ctx, r, "", crd.Name, "", func(o runtime.Object) {
		c := o.(*apiextensionsv1.CustomResourceDefinition)
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == CleanupFinalizer })
	})
}
