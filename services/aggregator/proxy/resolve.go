package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Resolver finds where the server behind an APIService's Service listens.
type Resolver interface {
	Resolve(ctx context.Context, svc *apiregistration.ServiceReference) (string, error)
}

// DNS resolves a Service to its cluster DNS name, <name>.<namespace>.svc, and the
// APIService's port: what a cluster's DNS (or, in docker compose, a network alias) answers.
type DNS struct{}

// Resolve implements Resolver.
func (DNS) Resolve(_ context.Context, s *apiregistration.ServiceReference) (string, error) {
	return net.JoinHostPort(s.Name+"."+s.Namespace+".svc", strconv.Itoa(int(ptr.Deref(s.Port, 443)))), nil
}

// Endpoints resolves a Service to one of its ready endpoints, as kube's aggregator does with
// --enable-aggregator-routing: the Service's port names the EndpointSlices' port, and slices
// of the Service's first IP family come first.
type Endpoints struct {
	client                registry.Source
	services, slicesOfSvc *registry.Resource
}

// NewEndpoints reads Services and EndpointSlices through client.
func NewEndpoints(client registry.Source) (*Endpoints, error) {
	services, ok1 := client.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	slicesOfSvc, ok2 := client.Lookup(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"))
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("services and endpointslices must be readable")
	}
	return &Endpoints{client: client, services: services, slicesOfSvc: slicesOfSvc}, nil
}

// Resolve implements Resolver.
func (e *Endpoints) Resolve(ctx context.Context, s *apiregistration.ServiceReference) (string, error) {
	svc, err := e.service(ctx, s)
	if err != nil {
		return "", err
	}
	return e.resolve(ctx, svc, s)
}

func (e *Endpoints) service(ctx context.Context, s *apiregistration.ServiceReference) (*corev1.Service, error) {
	o, err := e.client.Get(ctx, e.services, s.Namespace, s.Name)
	if err != nil {
		return nil, err
	}
	return o.(*corev1.Service), nil
}

func (e *Endpoints) resolve(ctx context.Context, svc *corev1.Service, s *apiregistration.ServiceReference) (string, error) {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	port := ptr.Deref(s.Port, 443)
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, svc.Name))
	}
	portName := svc.Spec.Ports[i].Name
	list, err := e.client.ListCached(ctx, e.slicesOfSvc, s.Namespace)
	if err != nil {
		return "", err
	}
	var family discoveryv1.AddressType
	if len(svc.Spec.IPFamilies) > 0 {
		family = discoveryv1.AddressType(svc.Spec.IPFamilies[0])
	}
	return randomEndpoint(svc.Name, ofService(list, svc.Name), portName, family)
}

func ofService(list []runtime.Object, name string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, o := range list {
		if s := o.(*discoveryv1.EndpointSlice); s.Labels[discoveryv1.LabelServiceName] == name {
			out = append(out, s)
		}
	}
	return out
}

// randomEndpoint is kube's choice of an endpoint: slices of the preferred family first,
// otherwise in random order, a random ready endpoint of the first slice that has the port.
func randomEndpoint(svcName string, list []*discoveryv1.EndpointSlice, portName string, family discoveryv1.AddressType) (string, error) {
	list = slices.Clone(list) // sorted here, not the caller's
	order := rand.Perm(len(list))
	rank := map[*discoveryv1.EndpointSlice]int{}
	for i, s := range list {
		rank[s] = order[i]
	}
	slices.SortFunc(list, func(a, b *discoveryv1.EndpointSlice) int {
		if (a.AddressType == family) != (b.AddressType == family) {
			if a.AddressType == family {
				return -1
			}
			return 1
		}
		return rank[a] - rank[b]
	})
	for _, s := range list {
		for _, p := range s.Ports {
			if ptr.Deref(p.Name, "") != portName || p.Port == nil || len(s.Endpoints) == 0 {
				continue
			}
			offset := rand.IntN(len(s.Endpoints))
			for i := range s.Endpoints {
				ep := &s.Endpoints[(i+offset)%len(s.Endpoints)]
				if (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || len(ep.Addresses) == 0 {
					continue
				}
				return net.JoinHostPort(loopbackName(s.AddressType, ep.Addresses[0]), strconv.Itoa(int(*p.Port))), nil
			}
		}
	}
	return "", noEndpoints{apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", svcName))}
}

// errNoEndpoints marks the error of a Service without a ready endpoint on the port.
var errNoEndpoints = errors.New("no endpoints")

type noEndpoints struct{ *apierrors.StatusError }

func (noEndpoints) Is(target error) bool { return target == errNoEndpoints }

// Services is core's services resource as the aggregator reads it (a copy through core's
// gRPC API).
func Services() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "services", Kind: "Service", Namespaced: true,
		New: func() runtime.Object { return &corev1.Service{} }}
}

// EndpointSlices is core's endpointslices resource as the aggregator reads it.
func EndpointSlices() *registry.Resource {
	return &registry.Resource{GroupVersion: discoveryv1.SchemeGroupVersion, Name: "endpointslices", Kind: "EndpointSlice", Namespaced: true,
		New: func() runtime.Object { return &discoveryv1.EndpointSlice{} }}
}

// Auto resolves a Service to one of its ready endpoints when its EndpointSlices list any, and
// to its cluster DNS name otherwise: the default, since apichain has no cluster IPs to route
// through. A headless Service with an EndpointSlice (an FQDN one may name localhost) and a
// compose network alias both work without flags. An ExternalName Service resolves to its
// external name and the APIService's port, as in kube.
type Auto struct{ Endpoints *Endpoints }

// Resolve implements Resolver.
func (a Auto) Resolve(ctx context.Context, s *apiregistration.ServiceReference) (string, error) {
	svc, err := a.Endpoints.service(ctx, s)
	if err != nil {
		return "", err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(ptr.Deref(s.Port, 443)))), nil
	}
	host, err := a.Endpoints.resolve(ctx, svc, s)
	if errors.Is(err, errNoEndpoints) {
		return DNS{}.Resolve(ctx, s)
	}
	return host, err
}

// loopbackName maps an FQDN endpoint under the localhost domain (wardle.localhost) to the
// loopback address, as RFC 6761 reserves it: an IP endpoint may not be loopback, so this is how
// an EndpointSlice names a server on the aggregator's own host (tests, the all-in-one).
func loopbackName(t discoveryv1.AddressType, addr string) string {
	if t == discoveryv1.AddressTypeFQDN && strings.HasSuffix(strings.TrimSuffix(strings.ToLower(addr), "."), ".localhost") {
		return "127.0.0.1"
	}
	return addr
}
