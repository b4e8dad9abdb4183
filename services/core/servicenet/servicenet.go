// Package servicenet allocates what a bare kube-apiserver allocates for Services: cluster IPs
// from --service-cluster-ip-range (one networking.k8s.io/v1 IPAddress object per address, as
// kube 1.33+ does, so two replicas can never hand out the same one: etcd refuses the second
// create) and node ports from --service-node-port-range (one etcd key per port, created only
// if absent). A repair loop frees what a failed or interrupted write left behind.
package servicenet

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Options are the service network flags, kube-apiserver's names and defaults.
type Options struct {
	ClusterIPRanges string
	NodePortRange   string
}

// NewOptions returns kube's defaults.
func NewOptions() *Options {
	return &Options{ClusterIPRanges: "10.0.0.0/24", NodePortRange: "30000-32767"}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterIPRanges, "service-cluster-ip-range", o.ClusterIPRanges,
		"CIDR range (or two, one per IP family, comma-separated) Services' cluster IPs are allocated from.")
	fs.StringVar(&o.NodePortRange, "service-node-port-range", o.NodePortRange, "Port range NodePort and LoadBalancer Services' node ports are allocated from.")
}

// Network is the parsed configuration.
type Network struct {
	CIDRs     []netip.Prefix // primary family first
	PortFirst int
	PortLast  int
}

// Parse checks the options.
func (o *Options) Parse() (*Network, error) {
	n := &Network{}
	for _, s := range strings.Split(o.ClusterIPRanges, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil || p.Masked() != p {
			return nil, fmt.Errorf("--service-cluster-ip-range: %q is not a CIDR", s)
		}
		if len(n.CIDRs) == 1 && n.CIDRs[0].Addr().Is4() == p.Addr().Is4() {
			return nil, errors.New("--service-cluster-ip-range: a second range must be of the other IP family")
		}
		if p.Addr().BitLen()-p.Bits() < 2 {
			return nil, fmt.Errorf("--service-cluster-ip-range: %s is too small", p)
		}
		n.CIDRs = append(n.CIDRs, p)
	}
	if len(n.CIDRs) > 2 {
		return nil, errors.New("--service-cluster-ip-range: at most two ranges, one per IP family")
	}
	first, last, ok := strings.Cut(o.NodePortRange, "-")
	var err1, err2 error
	n.PortFirst, err1 = strconv.Atoi(strings.TrimSpace(first))
	n.PortLast, err2 = strconv.Atoi(strings.TrimSpace(last))
	if !ok || err1 != nil || err2 != nil || n.PortFirst < 1 || n.PortLast > 65535 || n.PortFirst > n.PortLast {
		return nil, fmt.Errorf("--service-node-port-range: %q is not a port range like 30000-32767", o.NodePortRange)
	}
	return n, nil
}

// DualStack: the cluster has a range of each family.
func (n *Network) DualStack() bool { return len(n.CIDRs) == 2 }

// Family is the range of an IP family, if the cluster has one.
func (n *Network) Family(f corev1.IPFamily) (netip.Prefix, bool) {
	for _, p := range n.CIDRs {
		if p.Addr().Is4() == (f == corev1.IPv4Protocol) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// FamilyOf names an address's family.
func FamilyOf(a netip.Addr) corev1.IPFamily {
	if a.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// KubernetesServiceIP is the first address of the primary range, the kubernetes Service's.
func (n *Network) KubernetesServiceIP() netip.Addr { return n.CIDRs[0].Addr().Next() }

// Labels kube puts on the IPAddress objects its allocator manages.
const (
	labelFamily    = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy = "ipaddress.kubernetes.io/managed-by"
	managedBy      = "ipallocator.k8s.io"
)

// Allocator hands out and takes back cluster IPs and node ports.
type Allocator struct {
	net         *Network
	client      *registry.Client
	ipAddresses *registry.Resource
	store       *storage.Store
}

// NewAllocator allocates in net once bound to storage.
func NewAllocator(net *Network) *Allocator { return &Allocator{net: net} }

// Bind gives the allocator its storage: client for the IPAddress objects, store for node
// ports. It must be called before the first Service is written.
func (a *Allocator) Bind(client *registry.Client, store *storage.Store) error {
	r, ok := client.Lookup(networkingv1.SchemeGroupVersion.WithResource("ipaddresses"))
	if !ok {
		return errors.New("servicenet: ipaddresses are not served")
	}
	a.client, a.ipAddresses, a.store = client, r, store
	return nil
}

// Network is the configuration allocated from.
func (a *Allocator) Network() *Network { return a.net }

// NodePortKeys holds one key per allocated node port, its value the owner ("ns/name"): keys
// core claims in its storage besides its kinds'.
const NodePortKeys = "/apichain/nodeports/"

func nodePortKey(port int32) string { return NodePortKeys + strconv.Itoa(int(port)) }

// errTaken reports that a requested IP or port is already allocated.
var errTaken = errors.New("taken")

// allocateIP records ip as the service's; errTaken when it is another's.
func (a *Allocator) allocateIP(ctx context.Context, ip netip.Addr, svc *corev1.Service, dryRun bool) error {
	if dryRun {
		_, err := a.client.Get(ctx, a.ipAddresses, "", ip.String())
		if err == nil {
			return errTaken
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{labelFamily: string(FamilyOf(ip)), labelManagedBy: managedBy}},
		Spec:       networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
	err := a.client.Create(ctx, a.ipAddresses, "", obj)
	if apierrors.IsAlreadyExists(err) {
		return errTaken
	}
	return err
}

// ReleaseIP frees ip if it is still the named service's.
func (a *Allocator) ReleaseIP(ctx context.Context, ip, namespace, name string) error {
	o, err := a.client.Get(ctx, a.ipAddresses, "", ip)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ref := o.(*networkingv1.IPAddress).Spec.ParentRef
	if ref == nil || ref.Resource != "services" || ref.Namespace != namespace || ref.Name != name {
		return nil
	}
	uid := o.(*networkingv1.IPAddress).UID
	_, err = a.client.Delete(ctx, a.ipAddresses, "", ip, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// randomIP picks an address of p other than its network address, its last address and its
// first host (the kubernetes Service's).
func randomIP(p netip.Prefix) netip.Addr {
	hostBits := min(p.Addr().BitLen()-p.Bits(), 62)
	usable := uint64(1)<<hostBits - 2
	off := 2 + rand.Uint64N(usable-1) // in [2, usable]
	b := new(big.Int).Add(new(big.Int).SetBytes(p.Addr().AsSlice()), new(big.Int).SetUint64(off)).FillBytes(make([]byte, p.Addr().BitLen()/8))
	addr, _ := netip.AddrFromSlice(b)
	return addr
}

// AllocateClusterIP gives the service an address of family f (the one it asked for, or a
// free one) and returns it.
func (a *Allocator) allocateClusterIP(ctx context.Context, svc *corev1.Service, f corev1.IPFamily, requested string, path *field.Path, dryRun bool) (string, error) {
	p, ok := a.net.Family(f)
	if !ok {
		return "", field.Invalid(path, f, fmt.Sprintf("%s is not configured on this cluster", f))
	}
	if requested != "" {
		ip, err := netip.ParseAddr(requested)
		if err != nil {
			return "", field.Invalid(path, requested, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
		}
		if !p.Contains(ip) || ip == p.Addr() {
			return "", fmt.Errorf("failed to allocate IP %s: the provided network does not match the current range", requested)
		}
		if err := a.allocateIP(ctx, ip, svc, dryRun); errors.Is(err, errTaken) {
			return "", fmt.Errorf("failed to allocate IP %s: provided IP is already allocated", requested)
		} else if err != nil {
			return "", err
		}
		return requested, nil
	}
	for range 64 {
		ip := randomIP(p)
		if err := a.allocateIP(ctx, ip, svc, dryRun); errors.Is(err, errTaken) {
			continue
		} else if err != nil {
			return "", err
		}
		return ip.String(), nil
	}
	return "", fmt.Errorf("failed to allocate a serviceIP: range is full")
}

// allocateNodePort takes port (or a free one when 0) for the service.
func (a *Allocator) allocateNodePort(ctx context.Context, svc *corev1.Service, port int32, dryRun bool) (int32, error) {
	owner := svc.Namespace + "/" + svc.Name
	take := func(p int32) error {
		if dryRun {
			kv, _, err := a.store.Get(ctx, nodePortKey(p), 0)
			if err == nil && string(kv.Value) != owner {
				return errTaken
			}
			return nil
		}
		_, err := a.store.Create(ctx, nodePortKey(p), []byte(owner))
		if errors.Is(err, storage.ErrAlreadyExists) {
			return errTaken
		}
		return err
	}
	if port != 0 {
		if int(port) < a.net.PortFirst || int(port) > a.net.PortLast {
			return 0, fmt.Errorf("provided port is not in the valid range. The range of valid ports is %d-%d", a.net.PortFirst, a.net.PortLast)
		}
		if err := take(port); errors.Is(err, errTaken) {
			return 0, errors.New("provided port is already allocated")
		} else if err != nil {
			return 0, err
		}
		return port, nil
	}
	for range 128 {
		p := int32(a.net.PortFirst + rand.IntN(a.net.PortLast-a.net.PortFirst+1))
		if err := take(p); errors.Is(err, errTaken) {
			continue
		} else if err != nil {
			return 0, err
		}
		return p, nil
	}
	return 0, errors.New("range is full")
}

// ReleaseNodePort frees port if the named service holds it.
func (a *Allocator) ReleaseNodePort(ctx context.Context, port int32, namespace, name string) error {
	kv, _, err := a.store.Get(ctx, nodePortKey(port), 0)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if string(kv.Value) != namespace+"/"+name {
		return nil
	}
	_, err = a.store.Delete(ctx, kv.Key, kv.ModRevision)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		return nil
	}
	return err
}

// headless: the service asks for no cluster IP.
func headless(s *corev1.ServiceSpec) bool {
	return s.ClusterIP == corev1.ClusterIPNone || len(s.ClusterIPs) > 0 && s.ClusterIPs[0] == corev1.ClusterIPNone
}

// wantsNodePorts: the service type allocates node ports.
func wantsNodePorts(s *corev1.ServiceSpec) bool {
	return s.Type == corev1.ServiceTypeNodePort ||
		s.Type == corev1.ServiceTypeLoadBalancer && (s.AllocateLoadBalancerNodePorts == nil || *s.AllocateLoadBalancerNodePorts)
}

// Allocate is the services' registry.Resource.Allocate: the IP family fields defaulted as
// kube does, then the cluster IPs and node ports a new service needs, or a changed one needs
// in addition (what it keeps is carried over when the client left it out).
func (a *Allocator) Allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(), error) {
	svc := obj.(*corev1.Service)
	s := &svc.Spec
	var undo []func()
	undoAll := func() {
		for _, u := range undo {
			u()
		}
	}
	fail := func(errs ...*field.Error) (func(), error) {
		undoAll()
		return func() {}, registry.FieldErrors(errs)
	}
	var prev *corev1.ServiceSpec
	if old != nil {
		prev = &old.(*corev1.Service).Spec
	}
	normalizeClusterIPs(s, prev)
	if prev != nil {
		carryOver(s, prev)
	}
	sp := field.NewPath("spec")
	if s.Type == corev1.ServiceTypeExternalName {
		s.ClusterIP, s.ClusterIPs, s.IPFamilies, s.IPFamilyPolicy = "", nil, nil, nil
	} else if prev == nil || prev.Type == corev1.ServiceTypeExternalName {
		if headless(s) && s.Type == corev1.ServiceTypeClusterIP && len(s.Selector) == 0 {
			// kube lets a headless service without selector use both families, cluster
			// dual-stack or not: its endpoints are managed by hand.
			if s.IPFamilyPolicy == nil {
				s.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
			}
			if len(s.IPFamilies) == 0 {
				s.IPFamilies = []corev1.IPFamily{FamilyOf(a.net.CIDRs[0].Addr())}
			}
			if len(s.IPFamilies) == 1 && *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
				other := corev1.IPv6Protocol
				if s.IPFamilies[0] == corev1.IPv6Protocol {
					other = corev1.IPv4Protocol
				}
				s.IPFamilies = append(s.IPFamilies, other)
			}
		} else if errs := a.defaultFamilies(s, sp); len(errs) > 0 {
			return fail(errs...)
		}
		if headless(s) {
			s.ClusterIP, s.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
		} else {
			ips := make([]string, len(s.IPFamilies))
			for i, f := range s.IPFamilies {
				requested := ""
				if i < len(s.ClusterIPs) {
					requested = s.ClusterIPs[i]
				}
				ip, err := a.allocateClusterIP(ctx, svc, f, requested, sp.Child("clusterIPs").Index(i), dryRun)
				var fe *field.Error
				switch {
				case errors.As(err, &fe):
					return fail(fe)
				case err != nil && requested != "":
					return fail(field.Invalid(sp.Child("clusterIPs"), s.ClusterIPs, err.Error()))
				case err != nil:
					undoAll()
					return func() {}, apierrors.NewInternalError(err)
				}
				ips[i] = ip
				if !dryRun {
					undo = append(undo, func() { _ = a.ReleaseIP(context.WithoutCancel(ctx), ip, svc.Namespace, svc.Name) })
				}
			}
			s.ClusterIP, s.ClusterIPs = ips[0], ips
		}
	}
	held := map[int32]bool{}
	if prev != nil && wantsNodePorts(prev) {
		for _, p := range prev.Ports {
			held[p.NodePort] = true
		}
	}
	if wantsNodePorts(s) {
		taken := map[int32]bool{}
		for i := range s.Ports {
			p := &s.Ports[i]
			if p.NodePort != 0 && (held[p.NodePort] || taken[p.NodePort]) {
				continue // kept, or shared by the same port number over another protocol
			}
			port, err := a.allocateNodePort(ctx, svc, p.NodePort, dryRun)
			if err != nil {
				return fail(field.Invalid(sp.Child("ports").Index(i).Child("nodePort"), p.NodePort, err.Error()))
			}
			p.NodePort, taken[port] = port, true
			if !dryRun {
				undo = append(undo, func() { _ = a.ReleaseNodePort(context.WithoutCancel(ctx), port, svc.Namespace, svc.Name) })
			}
		}
	} else if prev != nil && wantsNodePorts(prev) {
		for i := range s.Ports {
			if held[s.Ports[i].NodePort] {
				s.Ports[i].NodePort = 0 // kube drops the node ports a type change ends
			}
		}
	}
	return undoAll, nil
}

// normalizeClusterIPs reads the singular clusterIP of a client that sets only it (an older
// one) into clusterIPs, as kube does.
func normalizeClusterIPs(s, prev *corev1.ServiceSpec) {
	if prev == nil {
		if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
			s.ClusterIPs = []string{s.ClusterIP}
		}
		return
	}
	if s.ClusterIP != prev.ClusterIP && slices.Equal(s.ClusterIPs, prev.ClusterIPs) {
		switch {
		case s.ClusterIP == "":
			s.ClusterIPs = nil
		case len(s.ClusterIPs) == 0:
			s.ClusterIPs = []string{s.ClusterIP}
		default:
			s.ClusterIPs = append([]string{s.ClusterIP}, s.ClusterIPs[1:]...)
		}
	}
}

// carryOver keeps what an update left out: the allocated IPs and families and the node ports
// of ports that are still there, as kube's patchAllocatedValues does.
func carryOver(s, prev *corev1.ServiceSpec) {
	if s.Type == corev1.ServiceTypeExternalName || prev.Type == corev1.ServiceTypeExternalName {
		return
	}
	if s.ClusterIP == "" && len(s.ClusterIPs) == 0 {
		s.ClusterIP, s.ClusterIPs = prev.ClusterIP, prev.ClusterIPs
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = prev.IPFamilies
	}
	if s.IPFamilyPolicy == nil {
		s.IPFamilyPolicy = prev.IPFamilyPolicy
	}
	if wantsNodePorts(s) && wantsNodePorts(prev) {
		for i := range s.Ports {
			if s.Ports[i].NodePort != 0 {
				continue
			}
			for _, p := range prev.Ports {
				if p.Port == s.Ports[i].Port && p.Protocol == s.Ports[i].Protocol || p.Name != "" && p.Name == s.Ports[i].Name {
					s.Ports[i].NodePort = p.NodePort
				}
			}
		}
	}
}

// defaultFamilies sets ipFamilyPolicy and ipFamilies as kube does for a new service.
func (a *Allocator) defaultFamilies(s *corev1.ServiceSpec, sp *field.Path) field.ErrorList {
	if s.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		if len(s.ClusterIPs) == 2 || len(s.IPFamilies) == 2 {
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		s.IPFamilyPolicy = &policy
	}
	if *s.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack && !a.net.DualStack() {
		return field.ErrorList{field.Invalid(sp.Child("ipFamilyPolicy"), *s.IPFamilyPolicy, "this cluster is not configured for dual-stack services")}
	}
	if len(s.IPFamilies) == 0 {
		for _, ip := range s.ClusterIPs {
			if addr, err := netip.ParseAddr(ip); err == nil {
				s.IPFamilies = append(s.IPFamilies, FamilyOf(addr))
			}
		}
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{FamilyOf(a.net.CIDRs[0].Addr())}
		}
	}
	for i, f := range s.IPFamilies {
		if _, ok := a.net.Family(f); !ok {
			return field.ErrorList{field.Invalid(sp.Child("ipFamilies").Index(i), f, "not configured on this cluster")}
		}
	}
	if *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack && a.net.DualStack() && len(s.IPFamilies) == 1 {
		for _, p := range a.net.CIDRs {
			if f := FamilyOf(p.Addr()); f != s.IPFamilies[0] {
				s.IPFamilies = append(s.IPFamilies, f)
			}
		}
	}
	return nil
}

// Release is the services' registry.Resource.Release: the IPs and node ports the service no
// longer holds (all of them once deleted) go back.
func (a *Allocator) Release(ctx context.Context, obj, old runtime.Object) {
	prev := old.(*corev1.Service)
	keepIPs, keepPorts := map[string]bool{}, map[int32]bool{}
	if obj != nil {
		s := &obj.(*corev1.Service).Spec
		for _, ip := range s.ClusterIPs {
			keepIPs[ip] = true
		}
		for _, p := range s.Ports {
			keepPorts[p.NodePort] = true
		}
	}
	ctx = context.WithoutCancel(ctx)
	for _, ip := range prev.Spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && !keepIPs[ip] {
			_ = a.ReleaseIP(ctx, ip, prev.Namespace, prev.Name)
		}
	}
	for _, p := range prev.Spec.Ports {
		if p.NodePort != 0 && !keepPorts[p.NodePort] {
			_ = a.ReleaseNodePort(ctx, p.NodePort, prev.Namespace, prev.Name)
		}
	}
}
