package crd

import (
	"context"
	"fmt"
	"slices"

	"github.com/apichain/apichain/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// finalize is kube's CRD finalizer controller: a CRD being deleted goes Terminating
// (InstanceDeletionInProgress), its custom resources are deleted through their DELETE (so
// their own finalizers hold them), and once none is left (InstanceDeletionCompleted, or
// NeverEstablished) the cleanup finalizer is removed, which lets the CRD go.
func finalize(ctx context.Context, client *registry.Client, r *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		return nil
	}
	terminating := func(status apiextensionsv1.ConditionStatus, reason, message string) error {
		return client.Update(ctx, r, "", crd.Name, "status", func(o runtime.Object) {
			setCondition(&o.(*apiextensionsv1.CustomResourceDefinition).Status, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Terminating, Status: status, Reason: reason, Message: message})
		})
	}
	if err := terminating(apiextensionsv1.ConditionTrue, "InstanceDeletionInProgress", "CustomResource deletion is in progress"); err != nil {
		return err
	}
	done := func() error {
		return terminating(apiextensionsv1.ConditionFalse, "InstanceDeletionCompleted", "removed all instances")
	}
	if !IsEstablished(crd) {
		done = func() error {
			return terminating(apiextensionsv1.ConditionFalse, "NeverEstablished", "resource was never established")
		}
	} else if remaining, err := deleteInstances(ctx, client, crd); err != nil {
		_ = terminating(apiextensionsv1.ConditionTrue, "InstanceDeletionFailed", fmt.Sprintf("could not issue all deletes: %v", err))
		return err
	} else if remaining > 0 {
		// Held by their finalizers: the next pass looks again.
		return terminating(apiextensionsv1.ConditionTrue, "InstanceDeletionCheck",
			fmt.Sprintf("could not confirm zero CustomResources remaining: %d remain", remaining))
	}
	if err := done(); err != nil {
		return err
	}
	return client.Update(ctx, r, "", crd.Name, "", func(o runtime.Object) {
		c := o.(*apiextensionsv1.CustomResourceDefinition)
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == CleanupFinalizer })
	})
}

// deleteInstances deletes the CRD's custom resources and counts those still held.
func deleteInstances(ctx context.Context, client *registry.Client, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		cr, ok := client.Lookup(schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Status.AcceptedNames.Plural})
		if !ok { // not served by this replica yet (it just started): the stored objects are the same
			conv, err := newWebhookConversion(crd)
			if err != nil {
				return 0, err
			}
			cv, err := customResource(crd, v, conv)
			if err != nil {
				return 0, err
			}
			cr = cv.resource
		}
		objs, err := client.List(ctx, cr, "", "")
		if err != nil {
			return 0, err
		}
		remaining := 0
		for _, o := range objs {
			acc := o.(metav1.Object)
			deleted, err := client.Delete(ctx, cr, acc.GetNamespace(), acc.GetName(), nil)
			if err != nil {
				return 0, err
			}
			if !deleted {
				remaining++
			}
		}
		return remaining, nil
	}
	return 0, nil
}
