package core

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// servicesResource is v1 Services: cluster IPs and node ports allocated by alloc (nil when core only
// lists what it serves), kube's validation and columns.
func servicesResource(alloc ServiceAllocator) *registry.Resource {
	r := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "services", SingularName: "service", Kind: "Service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: []string{"all"}, Subresources: []string{"proxy", "status"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[corev1.Service](), NewList: registry.Of[corev1.ServiceList](), ValidateName: apimachineryvalidation.NameIsDNSLabel,
		PrepareForCreate: func(_ context.Context, o runtime.Object) { o.(*corev1.Service).Status = corev1.ServiceStatus{} },
		Validate:         func(o runtime.Object) field.ErrorList { return validateService(o.(*corev1.Service)) },
		ValidateUpdate:   validateServiceUpdate,
		FieldLabels:      serviceFields, FieldLabelConversion: serviceFieldLabels,
		Columns: serviceColumns, Cells: serviceCells}
	if alloc != nil {
		r.Allocate, r.Release = alloc.Allocate, alloc.Release
	}
	return r
}

var serviceTypes = []string{"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}

func validateService(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	sp := field.NewPath("spec")
	headless := len(s.ClusterIPs) > 0 && s.ClusterIPs[0] == corev1.ClusterIPNone
	if len(s.Ports) == 0 && !headless && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(sp.Child("ports"), ""))
	}
	switch s.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(sp.Child("clusterIPs").Index(0), s.ClusterIPs[0], fmt.Sprintf("may not be set to 'None' for %s services", s.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(s.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(s.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if s.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(sp.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(s.ExternalName, "."); cname != "" {
			errs = append(errs, validate.DNSSubdomain(cname, sp.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(sp.Child("externalName"), ""))
		}
	}
	names := sets.New[string]()
	for i := range s.Ports {
		p := &s.Ports[i]
		pp := sp.Child("ports").Index(i)
		if len(s.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		} else if p.Name != "" {
			errs = append(errs, validate.DNS1123Label(p.Name, pp.Child("name"))...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		errs = append(errs, validate.InvalidEach(pp.Child("port"), p.Port, validation.IsValidPortNum(int(p.Port)))...)
		errs = append(errs, validate.Supported(pp.Child("protocol"), p.Protocol, corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
		errs = append(errs, validate.PortNumOrName(p.TargetPort, pp.Child("targetPort"))...)
		if p.AppProtocol != nil {
			errs = append(errs, validate.QualifiedName(*p.AppProtocol, pp.Child("appProtocol"))...)
		}
	}
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Selector, sp.Child("selector"))...)
	}
	errs = append(errs, validate.Supported(sp.Child("sessionAffinity"), s.SessionAffinity, corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)...)
	for i, ip := range s.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err != nil || a.Zone() != "" {
			errs = append(errs, field.Invalid(sp.Child("externalIPs").Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	if s.Type == "" {
		errs = append(errs, field.Required(sp.Child("type"), ""))
	} else if !sets.New(serviceTypes...).Has(string(s.Type)) {
		errs = append(errs, field.NotSupported(sp.Child("type"), s.Type, serviceTypes))
	}
	if s.Type == corev1.ServiceTypeClusterIP {
		for i, p := range s.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(sp.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	type key struct {
		protocol corev1.Protocol
		port     int32
	}
	nodePorts, ports := map[key]bool{}, map[key]bool{}
	for i, p := range s.Ports {
		pp := sp.Child("ports").Index(i)
		if p.NodePort != 0 {
			if nodePorts[key{p.Protocol, p.NodePort}] {
				errs = append(errs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
			}
			nodePorts[key{p.Protocol, p.NodePort}] = true
		}
		if ports[key{p.Protocol, p.Port}] {
			errs = append(errs, field.Duplicate(pp, key{p.Protocol, p.Port}))
		}
		ports[key{p.Protocol, p.Port}] = true
	}
	if s.Type != corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts != nil {
		errs = append(errs, field.Forbidden(sp.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	return errs
}

// validateServiceUpdate: a service keeps its cluster IPs unless it changes to or from ExternalName.
func validateServiceUpdate(o, old runtime.Object) field.ErrorList {
	s, prev := &o.(*corev1.Service).Spec, &old.(*corev1.Service).Spec
	if s.Type == corev1.ServiceTypeExternalName || prev.Type == corev1.ServiceTypeExternalName || len(prev.ClusterIPs) == 0 {
		return nil
	}
	if len(s.ClusterIPs) == 0 || s.ClusterIPs[0] != prev.ClusterIPs[0] {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.ClusterIPs, "may not change once set")}
	}
	if !apiequality.Semantic.DeepEqual(s.IPFamilies[:1], prev.IPFamilies[:1]) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "ipFamilies").Index(0), s.IPFamilies, "may not change once set")}
	}
	return nil
}
