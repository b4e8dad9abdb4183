package servicenet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultServiceCIDR is the ServiceCIDR kube makes from --service-cluster-ip-range.
const DefaultServiceCIDR = "kubernetes"

// EnsureDefaults creates what kube-apiserver's bootstrap makes of the service network: the
// "kubernetes" ServiceCIDR (Ready) and the "kubernetes" Service in default, on the range's
// first address, port 443 to targetPort (the gateway's).
func (a *Allocator) EnsureDefaults(ctx context.Context, targetPort int32) error {
	cidrs, ok := a.client.Lookup(networkingv1.SchemeGroupVersion.WithResource("servicecidrs"))
	if !ok {
		return fmt.Errorf("servicecidrs are not served")
	}
	var ranges []string
	for _, p := range a.net.CIDRs {
		ranges = append(ranges, p.String())
	}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDR}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: ranges}}
	if err := a.client.Create(ctx, cidrs, "", cidr); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("servicecidr %s: %w", DefaultServiceCIDR, err)
	}
	err := a.client.Update(ctx, cidrs, "", DefaultServiceCIDR, "status", func(o runtime.Object) {
		c := o.(*networkingv1.ServiceCIDR)
		for _, cond := range c.Status.Conditions {
			if cond.Type == networkingv1.ServiceCIDRConditionReady && cond.Status == metav1.ConditionTrue {
				return
			}
		}
		c.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.Now().Rfc3339Copy(), Message: "Kubernetes default Service CIDR is ready"}}
	})
	if err != nil {
		return fmt.Errorf("servicecidr %s status: %w", DefaultServiceCIDR, err)
	}
	services, ok := a.client.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	if !ok {
		return fmt.Errorf("services are not served")
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{ClusterIP: a.net.KubernetesServiceIP().String(), Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(targetPort)}}},
	}
	// Created only when missing: a create of the existing one fails on its address first, as
	// kube's does, and so does the create of a replica that lost the race to another.
	for attempt := 0; ; attempt++ {
		if _, err := a.client.Get(ctx, services, metav1.NamespaceDefault, svc.Name); !apierrors.IsNotFound(err) {
			return err // there (nil), or a real error
		}
		err := a.client.Create(ctx, services, metav1.NamespaceDefault, svc.DeepCopy())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if attempt == 20 {
			return fmt.Errorf("service default/kubernetes: %w", err)
		}
		select { // another replica's create may be in flight: look again
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Repair frees, every interval, the cluster IPs and node ports whose service does not hold them
// (a write that failed after allocating, a process that died in between), as kube's repair
// controllers do. Allocations younger than a minute are left alone: their write may be in flight.
func (a *Allocator) Repair(ctx context.Context, log *slog.Logger, interval time.Duration) {
	services, _ := a.client.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	t := time.NewTicker(interval)
	defer t.Stop()
	suspects := map[string]bool{} // orphaned node ports seen last pass
	for {
		if err := a.repair(ctx, services, suspects); err != nil && ctx.Err() == nil {
			log.Warn("service network repair", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Allocator) repair(ctx context.Context, services *registry.Resource, suspects map[string]bool) error {
	svcs, err := a.client.List(ctx, services, "", "")
	if err != nil {
		return err
	}
	ips, ports := map[string]string{}, map[string]string{}
	for _, o := range svcs {
		s := o.(*corev1.Service)
		for _, ip := range s.Spec.ClusterIPs {
			ips[ip] = s.Namespace + "/" + s.Name
		}
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				ports[fmt.Sprint(p.NodePort)] = s.Namespace + "/" + s.Name
			}
		}
	}
	addrs, err := a.client.List(ctx, a.ipAddresses, "", "")
	if err != nil {
		return err
	}
	old := time.Now().Add(-time.Minute)
	for _, o := range addrs {
		ip := o.(*networkingv1.IPAddress)
		ref := ip.Spec.ParentRef
		if ip.Labels[labelManagedBy] != managedBy || ip.CreationTimestamp.After(old) || ref == nil {
			continue
		}
		if ips[ip.Name] != ref.Namespace+"/"+ref.Name {
			if err := a.ReleaseIP(ctx, ip.Name, ref.Namespace, ref.Name); err != nil {
				return err
			}
		}
	}
	res, err := a.store.List(ctx, NodePortKeys, 0, "", 0)
	if err != nil {
		return err
	}
	seen, recorded := map[string]bool{}, map[string]bool{}
	for _, kv := range res.KVs {
		port := kv.Key[strings.LastIndex(kv.Key, "/")+1:]
		owner := string(kv.Value)
		recorded[port] = true
		if ports[port] == owner {
			continue
		}
		key := port + "=" + owner
		seen[key] = true
		if !suspects[key] { // orphaned for one whole interval before it is freed
			continue
		}
		ns, name, _ := strings.Cut(owner, "/")
		var p int32
		_, _ = fmt.Sscan(port, &p)
		if err := a.ReleaseNodePort(ctx, p, ns, name); err != nil {
			return err
		}
	}
	// A node port a service holds without a record (a Service another API server wrote on
	// the same etcd, kube-apiserver's bitmap in /registry/ranges) is recorded, so that no other
	// service is given it: kube's repair rebuilds its allocations from the Services the same way.
	for port, owner := range ports {
		if recorded[port] {
			continue
		}
		var p int32
		_, _ = fmt.Sscan(port, &p)
		if _, err := a.store.Create(ctx, nodePortKey(p), []byte(owner)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			return err
		}
	}
	clear(suspects)
	for k := range seen {
		suspects[k] = true
	}
	return nil
}
