package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/admission/match"
	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// watchConfiguration keeps apply fed with the stored objects of the named resources (each
// pass lists them all) through client until ctx ends: at once, after every write to any of
// them, and every ten minutes. synced is called after the first complete read.
func watchConfiguration(ctx context.Context, client registry.Source, log *slog.Logger, names []string, apply func([][]runtime.Object), synced func()) error {
	var rs []*registry.Resource
	for _, n := range names {
		r, ok := client.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource(n))
		if !ok {
			return fmt.Errorf("admission needs %s", n)
		}
		rs = append(rs, r)
	}
	// The loops below share one pass: one at a time, so a pass that read older lists cannot
	// apply them after a newer one, and synced is called once.
	var mu sync.Mutex
	var once sync.Once
	pass := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		lists := make([][]runtime.Object, len(rs))
		for i, r := range rs {
			objs, err := client.List(ctx, r, "", "")
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("admission configuration", "resource", r.Name, "err", err)
				}
				return err
			}
			lists[i] = objs
		}
		apply(lists)
		if synced != nil {
			once.Do(synced)
		}
		return nil
	}
	for _, r := range rs { // one loop per kind, each re-reading all: a write to any takes effect at once
		go registry.Reconcile(ctx, client, r, 10*time.Minute, pass)
	}
	return nil
}

func typed[T runtime.Object](objs []runtime.Object) []T {
	out := make([]T, len(objs))
	for i, o := range objs {
		out[i] = o.(T)
	}
	return out
}

// Namespaces reads namespaces for namespaceSelector through client: from its cache, and live
// when the cache does not have it yet (a namespace created a moment ago).
func Namespaces(client registry.Source) match.NamespaceGetter {
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
