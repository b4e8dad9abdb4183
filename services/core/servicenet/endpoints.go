package servicenet

import (
	"context"
	"fmt"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// kubernetesService is the Service (and Endpoints and EndpointSlice) that lists the API
// server's own addresses.
const kubernetesService = "kubernetes"

// EndpointAddresses keeps the addresses that the default/kubernetes Endpoints and
// EndpointSlice list: those of the gateways, apichain's API servers. It does what kube's lease
// endpoint reconciler does with the leases of its API servers, with the gateways' published
// lifecycle states as the leases.
type EndpointAddresses struct {
	client *registry.Client
	// addresses reads the gateways' addresses now ("ip:port"; others are skipped).
	addresses func() []string
}

// NewEndpointAddresses returns a reconciler writing through client.
func NewEndpointAddresses(client *registry.Client, addresses func() []string) *EndpointAddresses {
	return &EndpointAddresses{client: client, addresses: addresses}
}

// Run reconciles now, on every signal from changed and every interval, until ctx ends.
func (e *EndpointAddresses) Run(ctx context.Context, changed <-chan struct{}, interval time.Duration, log *slog.Logger) {
	controller.Loop(ctx, interval, func(ctx context.Context) error {
		err := e.Reconcile(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("default/kubernetes endpoints", "err", err)
		}
		return err
	}, changed)
}

// endpoint is an address the endpoints list, with its port.
type endpoint struct {
	ip   netip.Addr
	port int32
}

// endpoints turns the gateways' addresses into what an Endpoints may list: kube refuses
// unspecified, loopback and link-local addresses there. They come sorted by address, with one
// port for all (the most common; kube's API servers share theirs).
func (e *EndpointAddresses) endpoints() ([]netip.Addr, int32) {
	ports := map[int32]int{}
	seen := map[netip.Addr]bool{}
	var ips []netip.Addr
	for _, a := range e.addresses() {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			continue
		}
		ip := ap.Addr().Unmap()
		if ip.IsUnspecified() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || seen[ip] {
			continue
		}
		seen[ip] = true
		ips = append(ips, ip)
		ports[int32(ap.Port())]++
	}
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	var port int32
	most := 0
	for p, n := range ports {
		if n > most || (n == most && p < port) {
			port, most = p, n
		}
	}
	return ips, port
}

// Reconcile writes the Endpoints and the EndpointSlice if they do not list the gateways' addresses
// now. With no gateway address known it changes nothing, as kube refuses to erase all of them.
func (e *EndpointAddresses) Reconcile(ctx context.Context) error {
	ips, port := e.endpoints()
	if len(ips) == 0 {
		return nil
	}
	ports := []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}}
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{Ports: ports}},
	}
	for _, ip := range ips {
		want.Subsets[0].Addresses = append(want.Subsets[0].Addresses, corev1.EndpointAddress{IP: ip.String()})
	}
	if err := e.ensureEndpoints(ctx, want); err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}
	if err := e.ensureSlice(ctx, sliceOf(want, ips)); err != nil {
		return fmt.Errorf("endpointslice: %w", err)
	}
	return nil
}

// sliceOf is kube's EndpointSlice for the Endpoints: one address family (IPv6 only when every
// address is), one endpoint per address, ready.
func sliceOf(ep *corev1.Endpoints, ips []netip.Addr) *discoveryv1.EndpointSlice {
	family := discoveryv1.AddressTypeIPv6
	for _, ip := range ips {
		if ip.Is4() {
			family = discoveryv1.AddressTypeIPv4
		}
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ep.Name, Namespace: ep.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: ep.Name}},
		AddressType: family,
	}
	for _, p := range ep.Subsets[0].Ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(p.Protocol)})
	}
	for _, ip := range ips {
		if ip.Is6() == (family == discoveryv1.AddressTypeIPv6) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
	}
	return s
}

func (e *EndpointAddresses) ensureEndpoints(ctx context.Context, want *corev1.Endpoints) error {
	r, ok := e.client.Lookup(corev1.SchemeGroupVersion.WithResource("endpoints"))
	if !ok {
		return fmt.Errorf("endpoints are not served")
	}
	current, err := e.client.Get(ctx, r, want.Namespace, want.Name)
	if apierrors.IsNotFound(err) {
		if err := e.client.Create(ctx, r, want.Namespace, want); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil // another replica made it: the next pass checks it
	}
	if err != nil {
		return err
	}
	have := current.(*corev1.Endpoints)
	if have.Labels[discoveryv1.LabelSkipMirror] == "true" && apiequality.Semantic.DeepEqual(have.Subsets, want.Subsets) {
		return nil
	}
	return e.client.Update(ctx, r, want.Namespace, want.Name, "", func(o runtime.Object) {
		ep := o.(*corev1.Endpoints)
		if ep.Labels == nil {
			ep.Labels = map[string]string{}
		}
		ep.Labels[discoveryv1.LabelSkipMirror] = "true"
		ep.Subsets = want.Subsets
	})
}

func (e *EndpointAddresses) ensureSlice(ctx context.Context, want *discoveryv1.EndpointSlice) error {
	r, ok := e.client.Lookup(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"))
	if !ok {
		return fmt.Errorf("endpointslices are not served")
	}
	current, err := e.client.Get(ctx, r, want.Namespace, want.Name)
	if err == nil && current.(*discoveryv1.EndpointSlice).AddressType != want.AddressType {
		// The address type cannot change: kube deletes the slice and makes it again.
		if _, err := e.client.Delete(ctx, r, want.Namespace, want.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		err = apierrors.NewNotFound(r.GroupResource(), want.Name)
	}
	if apierrors.IsNotFound(err) {
		if err := e.client.Create(ctx, r, want.Namespace, want); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	have := current.(*discoveryv1.EndpointSlice)
	if apiequality.Semantic.DeepEqual(have.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(have.Ports, want.Ports) &&
		apiequality.Semantic.DeepEqual(have.Labels, want.Labels) {
		return nil
	}
	return e.client.Update(ctx, r, want.Namespace, want.Name, "", func(o runtime.Object) {
		s := o.(*discoveryv1.EndpointSlice)
		s.Labels, s.Endpoints, s.Ports = want.Labels, want.Endpoints, want.Ports
	})
}
