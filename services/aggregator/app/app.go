// Package app assembles the aggregator backend: apiregistration.k8s.io/v1 APIServices on
// etcd, the registration of the chain's own group/versions and their availability.
package app

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	proxyv1 "github.com/apichain/apichain/gen/apichain/proxy/v1"
	"github.com/apichain/apichain/pkg/admission"
	"github.com/apichain/apichain/pkg/admission/configuration"
	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/registry/remote"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/aggregator/apiservice"
	"github.com/apichain/apichain/services/aggregator/proxy"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options are the aggregator's own settings (its flags); each instance of the service has
// its own.
type Options struct {
	AggregatorRouting bool
	// ProxyClientCertFile and ProxyClientKeyFile are the front-proxy client certificate the
	// aggregator presents to aggregated API servers (--proxy-client-cert-file, ...-key-file;
	// the all-in-one sets its generated one).
	ProxyClientCertFile, ProxyClientKeyFile string
}

// Service is the aggregator backend configured by o.
func (o *Options) Service() backend.Service {
	return backend.Service{Name: topology.Aggregator, Served: Served, Setup: o.setup, Flags: func(fs *pflag.FlagSet) {
		fs.BoolVar(&o.AggregatorRouting, "enable-aggregator-routing", false,
			"Turns on aggregator routing requests to endpoints IP rather than cluster IP. Here: always to a ready endpoint of the APIService's Service (and its availability requires one); by default to one when its EndpointSlices list any, else to its cluster DNS name <name>.<namespace>.svc.")
		fs.StringVar(&o.ProxyClientCertFile, "proxy-client-cert-file", "",
			"Client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request. This includes proxying requests to a user api-server and calling out to webhook admission plugins. It is expected that this cert includes a signature from the CA in the --requestheader-client-ca-file flag. That CA is published in the 'extension-apiserver-authentication' configmap in the kube-system namespace. Components receiving calls from kube-aggregator should use that CA to perform their half of the mutual TLS verification.")
		fs.StringVar(&o.ProxyClientKeyFile, "proxy-client-key-file", "",
			"Private key for the client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request. This includes proxying requests to a user api-server and calling out to webhook admission plugins.")
	}}
}

// Served lists apiregistration.k8s.io/v1.
func Served() []*discoveryv1.GroupVersion {
	return registry.NewSet(apiservice.Resource()).Served()
}

// Stored are the resources this service keeps in etcd (the storage layout migration moves
// their objects).
func Stored() []*registry.Resource { return []*registry.Resource{apiservice.Resource()} }

// setup installs the APIService resource and its controllers on b.
func (o *Options) setup(b *backend.Backend) error {
	scheme, err := registry.NewScheme(apiregistration.AddToScheme)
	if err != nil {
		return err
	}
	h, err := b.InstallRegistry(scheme, registry.NewSet(apiservice.Resource()))
	if err != nil {
		return err
	}
	client := registry.NewClient(h)
	// What the aggregator only reads, copied through the owners' gRPC API: admission's
	// configurations, namespaces, and the Services and EndpointSlices aggregated servers are
	// reached by (core's); CRDs (extensions').
	core, err := remote.Install(b, topology.Core, append(configuration.Resources(), registry.Namespaces(),
		proxy.Services(), proxy.EndpointSlices())...)
	if err != nil {
		return err
	}
	crds, err := remote.Install(b, topology.Extensions, apiservice.CustomResourceDefinitions())
	if err != nil {
		return err
	}
	if err := admission.Install(b, h, core, client); err != nil {
		return err
	}
	if err := o.serveProxy(b, client, core); err != nil {
		return err
	}
	b.Server.AddHealthChecks(apiservice.Completion(client))
	return b.Server.AddPostStartHook("kube-apiserver-autoregistration", func(ctx context.Context) error {
		go func() {
			// Not before the CRDs are known, as kube's crd-autoregistration waits for its
			// informer: a first pass without them deletes every CRD's APIService.
			if crds.WaitSynced(ctx) == nil {
				apiservice.NewAutoRegister(client, crds, b.Log).Run(ctx, 5*time.Minute)
			}
		}()
		return nil
	})
}

// serveProxy forwards the remote APIServices' requests, and publishes their group/versions as
// proxied as APIServices come and go.
func (o *Options) serveProxy(b *backend.Backend, apiservices *registry.Client, core registry.Source) error {
	endpoints, err := proxy.NewEndpoints(core)
	if err != nil {
		return err
	}
	var cert *certs.KeyPair // reloaded when its files change
	if o.ProxyClientCertFile != "" || o.ProxyClientKeyFile != "" {
		c, err := certs.LoadKeyPair(o.ProxyClientCertFile, o.ProxyClientKeyFile)
		if err != nil {
			return fmt.Errorf("--proxy-client-cert-file/--proxy-client-key-file: %w", err)
		}
		cert = c
	}
	r, _ := apiservices.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	lookup := func(ctx context.Context, group, version string) (*apiregistration.APIService, error) {
		obj, err := apiservices.Get(ctx, r, "", apiregistration.Name(schema.GroupVersion{Group: group, Version: version}))
		if err != nil {
			return nil, err
		}
		return obj.(*apiregistration.APIService), nil
	}
	server := proxy.NewServer(lookup, endpoints, o.AggregatorRouting, cert)
	server.TraceWith(b.Tracer().Active())
	b.RegisterService(&proxyv1.ProxyService_ServiceDesc, server)
	if err := b.Server.AddPostStartHook("apiservice-status-local-available-controller", func(ctx context.Context) error {
		go apiservice.RunAvailability(ctx, apiservices, nil, nil, b.Server.RecheckReadiness, b.Log, 5*time.Minute)
		return nil
	}); err != nil {
		return err
	}
	b.SetGroupOrder(apiservice.GroupOrder(apiservices))
	own := registry.NewSet(apiservice.Resource()).Served()
	// As kube's apiservice-registration-controller, it also tells the gateways which group/versions
	// the aggregator proxies.
	if err := b.Server.AddPostStartHook("apiservice-discovery-controller", func(ctx context.Context) error {
		go apiservice.RunRemoteDiscovery(ctx, apiservices, own, server.Resources, b.SetServed, b.SetProxied, b.SetDiscoveryWarnings, b.Log, 30*time.Second)
		return nil
	}); err != nil {
		return err
	}
	// Their OpenAPI documents are served with the aggregator's own, as kube's
	// apiservice-openapi-controller and apiservice-openapiv3-controller do (one controller here).
	if err := b.Server.AddPostStartHook("apiservice-openapi-controller", func(ctx context.Context) error {
		set := func(v3 map[schema.GroupVersion][]byte, v2 [][]byte) error { return b.SetCustomOpenAPI(v3, nil, v2) }
		go apiservice.RunRemoteOpenAPI(ctx, apiservices, server.Document, set, b.Log, time.Minute)
		return nil
	}); err != nil {
		return err
	}
	// Remote ones are checked on every change to APIServices, Services and EndpointSlices, after
	// a request could not reach its server, and every 10 s (kube: 30 s), so a server that died
	// without a request noticing is marked within 10 s and one that came back is used again.
	return b.Server.AddPostStartHook("apiservice-status-remote-available-controller", func(ctx context.Context) error {
		go func() {
			triggers := []<-chan registry.Change{core.Watch(ctx, proxy.Services()), core.Watch(ctx, proxy.EndpointSlices()), failures(ctx, server.Failures())}
			apiservice.RunAvailability(ctx, apiservices, server.Check, triggers, nil, b.Log, 10*time.Second)
		}()
		return nil
	})
}

// failures turns the proxy's reports of unreachable servers into a trigger of the availability
// check.
func failures(ctx context.Context, in <-chan struct{}) <-chan registry.Change {
	out := make(chan registry.Change)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case <-in:
				select {
				case out <- registry.Change{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
