package crd

import (
	"context"
	"slices"

	"github.com/apichain/apichain/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// finalize removes the cleanup finalizer of a CRD being deleted, which then goes away. Custom
// resources are not served yet, so there are none to delete first; serving them makes this
// the place that deletes them (kube's InstanceDeletionInProgress).
func finalize(ctx context.Context, client *registry.Client, r *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		return nil
	}
	return client.Update(ctx, r, "", crd.Name, "", func(o runtime.Object) {
		c := o.(*apiextensionsv1.CustomResourceDefinition)
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == CleanupFinalizer })
	})
}
