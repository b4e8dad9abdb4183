// Package app assembles the extensions backend: CustomResourceDefinitions and the custom
// resources they define, on etcd.
package app

import (
	"context"
	"sync"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/admission"
	"github.com/apichain/apichain/pkg/admission/configuration"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/registry/remote"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/extensions/crd"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Service is the extensions backend.
var Service = backend.Service{Name: topology.Extensions, Served: Served, Setup: Setup}

// Served lists apiextensions.k8s.io/v1.
func Served() []*discoveryv1.GroupVersion {
	return registry.NewSet(crd.Resource()).Served()
}

// Stored are the resources this service keeps in etcd (the storage layout migration moves
// their objects).
func Stored() []*registry.Resource { return []*registry.Resource{crd.Resource()} }

// Setup installs the CRD resource and its controller on b.
func Setup(b *backend.Backend) error {
	scheme, err := registry.NewScheme(crd.Install)
	if err != nil {
		return err
	}
	base := crd.Resource()
	h, err := b.InstallRegistry(scheme, registry.NewSet(base))
	if err != nil {
		return err
	}
	client := registry.NewClient(h)
	// Admission reads core's configurations and namespaces from a copy of them, kept through
	// core's gRPC API.
	core, err := remote.Install(b, topology.Core, append(configuration.Resources(), registry.Namespaces())...)
	if err != nil {
		return err
	}
	if err := admission.Install(b, h, core, client); err != nil {
		return err
	}
	// Custom resources are served as their CRDs are established, and go with them.
	custom := &crd.CustomResources{}
	synced := make(chan struct{})
	var once sync.Once
	serve := func(crds []*apiextensionsv1.CustomResourceDefinition) {
		defer once.Do(func() { close(synced) })
		resources, changed := custom.Of(crds, b.Log)
		if !changed {
			return
		}
		next := registry.NewSet(append([]*registry.Resource{base}, resources...)...)
		h.SetResources(next)
		if docs, kinds, err := custom.OpenAPI(); err != nil {
			b.Log.Warn("custom resources' OpenAPI", "err", err)
		} else if err := b.SetCustomOpenAPI(docs, kinds, nil); err != nil {
			b.Log.Warn("custom resources' OpenAPI", "err", err)
		}
		b.SetServed(next.Served())
	}
	if err := b.Server.AddPostStartHook("start-apiextensions-controllers", func(ctx context.Context) error {
		go crd.RunController(ctx, client, b.Log, 5*time.Minute, serve)
		return nil
	}); err != nil {
		return err
	}
	// As kube's: not ready before the established CRDs' resources are served (and announced),
	// so a restarted replica takes no custom resource request it would not know.
	return b.Server.AddPostStartHook("crd-informer-synced", func(ctx context.Context) error {
		select {
		case <-synced:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
