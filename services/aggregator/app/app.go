// Package app assembles the aggregator backend: apiregistration.k8s.io/v1 APIServices on
// etcd, the registration of the chain's own group/versions and their availability.
package app

import (
	"context"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/admission"
	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/aggregator/apiservice"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Service is the aggregator backend.
var Service = backend.Service{Name: topology.Aggregator, Served: Served, Setup: Setup}

// Served lists apiregistration.k8s.io/v1.
func Served() []*discoveryv1.GroupVersion {
	return registry.NewSet(apiservice.Resource()).Served()
}

// Setup installs the APIService resource and its controllers on b.
func Setup(b *backend.Backend) error {
	scheme, err := registry.NewScheme(apiregistration.AddToScheme)
	if err != nil {
		return err
	}
	set := registry.NewSet(apiservice.Resource())
	b.SetOpenAPI(set)
	store := storage.NewStore(b.Etcd)
	h := registry.NewHandler(scheme, set, store, b.Stopping())
	h.WarmUp()
	b.SetResources(h)
	client := registry.NewClient(h)
	// What the aggregator only reads: admission's configurations and namespaces (core's), and
	// CRDs (extensions').
	readScheme, err := registry.NewScheme(admissionregistrationv1.AddToScheme, corev1.AddToScheme, apiextensionsv1.AddToScheme)
	if err != nil {
		return err
	}
	others := registry.NewHandler(readScheme, registry.NewSet(append(admission.ConfigurationResources(), registry.Namespaces(),
		apiservice.CustomResourceDefinitions())...), store, b.Stopping())
	othersClient := registry.NewClient(others)
	if err := admission.Install(b, h, othersClient, client); err != nil {
		return err
	}
	b.Server.AddHealthChecks(apiservice.Completion(client))
	if err := b.Server.AddPostStartHook("kube-apiserver-autoregistration", func(ctx context.Context) error {
		go apiservice.NewAutoRegister(client, othersClient, b.Log).Run(ctx, 5*time.Minute)
		return nil
	}); err != nil {
		return err
	}
	if err := b.Server.AddPostStartHook("apiservice-status-local-available-controller", func(ctx context.Context) error {
		go apiservice.RunAvailability(ctx, client, b.Log, 5*time.Minute)
		return nil
	}); err != nil {
		return err
	}
	return b.Server.AddPostStartHook("start-watch-cache", func(ctx context.Context) error {
		h.EnableWatchCache(ctx, b.Log)
		others.EnableWatchCache(ctx, b.Log)
		return nil
	})
}
