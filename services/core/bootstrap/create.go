package bootstrap

import (
	"context"
	"fmt"

	"github.com/apichain/apichain/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EnsureObjects creates the objects of gvr that do not exist, leaving existing ones as they
// are (kube's scheduling/bootstrap-system-priority-classes: the classes' validation keeps
// them from changing).
func EnsureObjects[T runtime.Object](ctx context.Context, client *registry.Client, gvr schema.GroupVersionResource, objs []T) error {
	r, ok := client.Lookup(gvr)
	if !ok {
		return fmt.Errorf("%v is not served here", gvr)
	}
	for _, o := range objs {
		if err := client.Create(ctx, r, "", o.DeepCopyObject()); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
