package apiservice

import (
	"context"
	"errors"
	"fmt"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CustomResourceDefinitions is the CRD resource as the aggregator reads it: extensions owns
// and serves it; the aggregator keeps a copy through extensions' gRPC API, as kube's
// crd-autoregistration reads its informer.
func CustomResourceDefinitions() *registry.Resource {
	return &registry.Resource{GroupVersion: apiextensionsv1.SchemeGroupVersion, Name: "customresourcedefinitions",
		Kind: "CustomResourceDefinition", New: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} }}
}

// AutoRegister keeps an APIService for every local group/version, as kube's autoregister and
// crd-autoregistration controllers do: the built-in ones (labelled automanaged "onstart":
// made or corrected at start, and those no longer built in removed then) and every served
// version of every CRD (automanaged "true": kept as long as a CRD serves it, removed when none
// does). An APIService without the label is the user's and left alone.
type AutoRegister struct {
	apiservices *registry.Client
	crds        registry.Source
	log         *slog.Logger
	// synced are the names handled once without error; atStart the APIServices that existed
	// at the first pass.
	synced, atStart map[string]bool
}

// NewAutoRegister writes through apiservices and reads CRDs from crds (a copy of extensions').
func NewAutoRegister(apiservices *registry.Client, crds registry.Source, log *slog.Logger) *AutoRegister {
	return &AutoRegister{apiservices: apiservices, crds: crds, log: log, synced: map[string]bool{}}
}

// Run registers now, on every change to APIServices or CRDs and every resync, until ctx ends.
func (a *AutoRegister) Run(ctx context.Context, resync time.Duration) {
	apiservices, _ := a.apiservices.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	crds, _ := a.crds.Lookup(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		err := a.pass(ctx, apiservices, crds)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("APIService registration", "err", err)
		}
		return err
	}, a.apiservices.Watch(ctx, apiservices), a.crds.Watch(ctx, crds))
}

// desired are the APIServices that should exist, by name.
func (a *AutoRegister) desired(ctx context.Context, crds *registry.Resource) (map[string]*apiregistration.APIService, error) {
	want := map[string]*apiregistration.APIService{}
	for gv, p := range apiregistration.Builtin {
		want[apiregistration.Name(gv)] = local(gv, p, apiregistration.AutomanagedOnStart)
	}
	// A consistent read: the pass may run for a CRD change the watch cache has not seen yet.
	list, err := a.crds.List(ctx, crds, "", "")
	if err != nil {
		return nil, fmt.Errorf("custom resource definitions: %w", err)
	}
	for _, o := range list {
		crd := o.(*apiextensionsv1.CustomResourceDefinition)
		for _, v := range crd.Spec.Versions {
			gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			if _, builtin := apiregistration.Builtin[gv]; v.Served && !builtin {
				want[apiregistration.Name(gv)] = local(gv, apiregistration.CustomResourcePriority, apiregistration.AutomanagedTrue)
			}
		}
	}
	return want, nil
}

func local(gv schema.GroupVersion, p apiregistration.Priority, managed string) *apiregistration.APIService {
	return &apiregistration.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: apiregistration.Name(gv), Labels: map[string]string{apiregistration.AutomanagedLabel: managed}},
		Spec:       apiregistration.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
	}
}

func (a *AutoRegister) pass(ctx context.Context, apiservices, crds *registry.Resource) error {
	want, err := a.desired(ctx, crds)
	if err != nil {
		return err
	}
	list, err := a.apiservices.List(ctx, apiservices, "", "")
	if err != nil {
		return err
	}
	existing := map[string]*apiregistration.APIService{}
	for _, o := range list {
		existing[o.(*apiregistration.APIService).Name] = o.(*apiregistration.APIService)
	}
	if a.atStart == nil {
		a.atStart = map[string]bool{}
		for name := range existing {
			a.atStart[name] = true
		}
	}
	names := slices.Collect(maps.Keys(want))
	for name := range existing {
		if want[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	// Each name on its own, all at once: at a first start that is two dozen creates, which
	// etcd commits together rather than one after another.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	synced := a.syncedNow()
	for _, name := range names {
		wg.Go(func() {
			err := a.check(ctx, apiservices, want[name], existing[name], synced[name])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("apiservice %s: %w", name, err))
			} else {
				a.synced[name] = true
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// check is kube's autoregister decision for one name: create what is wanted and missing, but
// a built-in one only until its first sync (a user may delete it then, and it stays deleted
// until the next start); correct the spec of a managed one and delete a managed one no longer
// wanted (a built-in one only at start); leave the user's alone.
func (a *AutoRegister) check(ctx context.Context, apiservices *registry.Resource, want, have *apiregistration.APIService, synced bool) error {
	switch {
	case have == nil && want == nil:
		return nil
	case want != nil && managedBy(want) == apiregistration.AutomanagedOnStart && synced:
		return nil
	case have == nil:
		if err := a.apiservices.Create(ctx, apiservices, "", want.DeepCopy()); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	case managedBy(have) == "":
		return nil
	case managedBy(have) == apiregistration.AutomanagedOnStart && (!a.atStart[have.Name] || synced):
		return nil
	case want == nil:
		_, err := a.apiservices.Delete(ctx, apiservices, "", have.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case apiequality.Semantic.DeepEqual(have.Spec, want.Spec):
		return nil
	}
	err := a.apiservices.Update(ctx, apiservices, "", have.Name, "", func(o runtime.Object) { o.(*apiregistration.APIService).Spec = want.Spec })
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// syncedNow is a copy of the names handled once, for one pass.
func (a *AutoRegister) syncedNow() map[string]bool { return maps.Clone(a.synced) }

// managedBy is the automanaged label's value if it is one kube's autoregister manages.
func managedBy(a *apiregistration.APIService) string {
	switch v := a.Labels[apiregistration.AutomanagedLabel]; v {
	case apiregistration.AutomanagedOnStart, apiregistration.AutomanagedTrue:
		return v
	}
	return ""
}
