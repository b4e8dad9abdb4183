package networking

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ingresses are networking.k8s.io/v1 Ingresses with kube's validation and columns.
func ingresses() *registry.Resource {
	return &registry.Resource{GroupVersion: networkingv1.SchemeGroupVersion, Name: "ingresses", SingularName: "ingress", Kind: "Ingress",
		Namespaced: true, ShortNames: []string{"ing"}, Subresources: []string{"status"}, HasSpec: true,
		New: registry.Of[networkingv1.Ingress](), NewList: registry.Of[networkingv1.IngressList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateIngressSpec(&o.(*networkingv1.Ingress).Spec, field.NewPath("spec"))
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
			registry.Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
			registry.Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
			registry.Column("Ports", "string", "Ports of TLS configurations that open"),
		},
		Cells: func(o runtime.Object) []any {
			in := o.(*networkingv1.Ingress)
			class := "<none>"
			if in.Spec.IngressClassName != nil {
				class = *in.Spec.IngressClassName
			}
			var hosts []string
			for i, r := range in.Spec.Rules {
				if i == 3 {
					break
				}
				if r.Host != "" {
					hosts = append(hosts, r.Host)
				}
			}
			hostText := strings.Join(hosts, ",")
			switch {
			case len(hosts) == 0:
				hostText = "*"
			case len(in.Spec.Rules) > 3:
				hostText = fmt.Sprintf("%s + %d more...", hostText, len(in.Spec.Rules)-3)
			}
			addrs := map[string]bool{}
			for _, lb := range in.Status.LoadBalancer.Ingress {
				if lb.IP != "" {
					addrs[lb.IP] = true
				} else if lb.Hostname != "" {
					addrs[lb.Hostname] = true
				}
			}
			list := make([]string, 0, len(addrs))
			for a := range addrs {
				list = append(list, a)
			}
			sort.Strings(list)
			ports := "80"
			if len(in.Spec.TLS) > 0 {
				ports = "80, 443"
			}
			return []any{class, hostText, strings.Join(list, ","), ports}
		},
	}
}

var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

func validateIngressSpec(s *networkingv1.IngressSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Rules) == 0 && s.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, s.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(s.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i, r := range s.Rules {
		rp := p.Child("rules").Index(i)
		if r.Host != "" {
			if _, err := netip.ParseAddr(r.Host); err == nil {
				errs = append(errs, field.Invalid(rp.Child("host"), r.Host, "must be a DNS name, not an IP address"))
			}
			check := validation.IsDNS1123Subdomain
			if strings.Contains(r.Host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			errs = append(errs, validate.InvalidEach(rp.Child("host"), r.Host, check(r.Host))...)
		}
		if r.HTTP == nil {
			continue
		}
		hp := rp.Child("http")
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp.Child("paths"), ""))
		}
		for j, path := range r.HTTP.Paths {
			pp := hp.Child("paths").Index(j)
			if path.PathType == nil {
				errs = append(errs, field.Required(pp.Child("pathType"), "pathType must be specified"))
				continue
			}
			switch *path.PathType {
			case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
				if !strings.HasPrefix(path.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), path.Path, "must be an absolute path"))
				}
				for _, seq := range invalidPathSequences {
					if strings.Contains(path.Path, seq) {
						errs = append(errs, field.Invalid(pp.Child("path"), path.Path, fmt.Sprintf("must not contain '%s'", seq)))
					}
				}
				for _, suffix := range invalidPathSuffixes {
					if strings.HasSuffix(path.Path, suffix) {
						errs = append(errs, field.Invalid(pp.Child("path"), path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
					}
				}
			case networkingv1.PathTypeImplementationSpecific:
				if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), path.Path, "must be an absolute path"))
				}
			default:
				errs = append(errs, field.NotSupported(pp.Child("pathType"), *path.PathType, []string{"Exact", "ImplementationSpecific", "Prefix"}))
			}
			errs = append(errs, validateIngressBackend(&path.Backend, pp.Child("backend"))...)
		}
	}
	for i, tls := range s.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			check := validation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			errs = append(errs, validate.InvalidEach(tp.Child("hosts").Index(j), host, check(host))...)
		}
		if tls.SecretName != "" {
			errs = append(errs, validate.InvalidEach(tp.Child("secretName"), tls.SecretName, apivalidation.NameIsDNSSubdomain(tls.SecretName, false))...)
		}
	}
	if s.IngressClassName != nil {
		errs = append(errs, validate.InvalidEach(p.Child("ingressClassName"), *s.IngressClassName, apivalidation.NameIsDNSSubdomain(*s.IngressClassName, false))...)
	}
	return errs
}

func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		rp := p.Child("resource")
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), ""))
		}
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(rp.Child("kind"), ""))
		}
	case b.Service != nil:
		sp := p.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			errs = append(errs, validate.InvalidEach(sp.Child("name"), b.Service.Name, apivalidation.NameIsDNS1035Label(b.Service.Name, false))...)
		}
		switch port := b.Service.Port; {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case port.Name != "":
			errs = append(errs, validate.InvalidEach(sp.Child("port", "name"), port.Name, validation.IsValidPortName(port.Name))...)
		case port.Number != 0:
			errs = append(errs, validate.InvalidEach(sp.Child("port", "number"), port.Number, validation.IsValidPortNum(int(port.Number)))...)
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(p, "", "resource or service backend is required"))
	}
	return errs
}

// networkPolicies are networking.k8s.io/v1 NetworkPolicies with kube's defaults (policyTypes,
// port protocol), validation and columns.
func networkPolicies() *registry.Resource {
	return &registry.Resource{GroupVersion: networkingv1.SchemeGroupVersion, Name: "networkpolicies", SingularName: "networkpolicy",
		Kind: "NetworkPolicy", Namespaced: true, ShortNames: []string{"netpol"}, HasSpec: true,
		New: registry.Of[networkingv1.NetworkPolicy](), NewList: registry.Of[networkingv1.NetworkPolicyList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateNetworkPolicySpec(&o.(*networkingv1.NetworkPolicy).Spec, field.NewPath("spec"))
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"])},
		Cells: func(o runtime.Object) []any {
			return []any{metav1.FormatLabelSelector(&o.(*networkingv1.NetworkPolicy).Spec.PodSelector)}
		},
	}
}

func validateNetworkPolicySpec(s *networkingv1.NetworkPolicySpec, p *field.Path) field.ErrorList {
	errs := validate.LabelSelector(&s.PodSelector, p.Child("podSelector"))
	rules := func(kind, peers string, n int, ports func(int) []networkingv1.NetworkPolicyPort, peer func(int) []networkingv1.NetworkPolicyPeer) {
		for i := range n {
			rp := p.Child(kind).Index(i)
			for j, port := range ports(i) {
				errs = append(errs, validateNetworkPolicyPort(&port, rp.Child("ports").Index(j))...)
			}
			for j, pr := range peer(i) {
				errs = append(errs, validateNetworkPolicyPeer(&pr, rp.Child(peers).Index(j))...)
			}
		}
	}
	rules("ingress", "from", len(s.Ingress), func(i int) []networkingv1.NetworkPolicyPort { return s.Ingress[i].Ports },
		func(i int) []networkingv1.NetworkPolicyPeer { return s.Ingress[i].From })
	rules("egress", "to", len(s.Egress), func(i int) []networkingv1.NetworkPolicyPort { return s.Egress[i].Ports },
		func(i int) []networkingv1.NetworkPolicyPeer { return s.Egress[i].To })
	if len(s.PolicyTypes) > 2 {
		return append(errs, field.Invalid(p.Child("policyTypes"), &s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, []string{"Ingress", "Egress"}))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != "TCP" && *pr != "UDP" && *pr != "SCTP" {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *pr, []string{"TCP", "UDP", "SCTP"}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		errs = append(errs, validate.InvalidEach(p.Child("port"), port.Port.IntVal, validation.IsValidPortNum(int(port.Port.IntVal)))...)
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			errs = append(errs, validate.InvalidEach(p.Child("endPort"), *port.EndPort, validation.IsValidPortNum(int(*port.EndPort)))...)
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		errs = append(errs, validate.InvalidEach(p.Child("port"), port.Port.StrVal, validation.IsValidPortName(port.Port.StrVal))...)
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, validate.LabelSelector(peer.PodSelector, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, validate.LabelSelector(peer.NamespaceSelector, p.Child("namespaceSelector"))...)
	}
	if b := peer.IPBlock; b != nil {
		n++
		bp := p.Child("ipBlock")
		cidr, err := netip.ParsePrefix(b.CIDR)
		if b.CIDR == "" {
			errs = append(errs, field.Required(bp.Child("cidr"), ""))
		} else if err != nil {
			errs = append(errs, field.Invalid(bp.Child("cidr"), b.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		}
		for i, ex := range b.Except {
			e, err := netip.ParsePrefix(ex)
			if err != nil {
				errs = append(errs, field.Invalid(bp.Child("except").Index(i), ex, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
				continue
			}
			if cidr.IsValid() && (e.Bits() <= cidr.Bits() || !cidr.Contains(e.Addr())) {
				errs = append(errs, field.Invalid(bp.Child("except").Index(i), ex, "must be a strict subset of `cidr`"))
			}
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// ipAddresses are networking.k8s.io/v1 IPAddresses (named by the address they hold) with
// kube's validation and columns.
func ipAddresses() *registry.Resource {
	return &registry.Resource{GroupVersion: networkingv1.SchemeGroupVersion, Name: "ipaddresses", SingularName: "ipaddress", Kind: "IPAddress",
		ShortNames: []string{"ip"}, HasSpec: true, NoGeneration: true, NoAgeColumn: true, New: registry.Of[networkingv1.IPAddress](), NewList: registry.Of[networkingv1.IPAddressList](),
		ValidateName: func(name string, _ bool) []string {
			a, err := netip.ParseAddr(name)
			if err != nil || a.Zone() != "" {
				return []string{"must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}
			}
			if a.String() != name {
				return []string{fmt.Sprintf("must be in canonical form (%q)", a.String())}
			}
			return nil
		},
		Validate: func(o runtime.Object) field.ErrorList {
			ref := o.(*networkingv1.IPAddress).Spec.ParentRef
			p := field.NewPath("spec", "parentRef")
			if ref == nil {
				return field.ErrorList{field.Required(p, "")}
			}
			var errs field.ErrorList
			if ref.Group != "" {
				errs = append(errs, validate.InvalidEach(p.Child("group"), ref.Group, validation.IsDNS1123Subdomain(ref.Group))...)
			}
			if ref.Resource == "" {
				errs = append(errs, field.Required(p.Child("resource"), ""))
			}
			if ref.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*networkingv1.IPAddress).Spec.ParentRef, old.(*networkingv1.IPAddress).Spec.ParentRef) {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "parentRef"), o.(*networkingv1.IPAddress).Spec.ParentRef, validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("ParentRef", "string", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"])},
		Cells: func(o runtime.Object) []any {
			ref := o.(*networkingv1.IPAddress).Spec.ParentRef
			if ref == nil {
				return []any{"<none>"}
			}
			name := strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
			if ref.Namespace != "" {
				name += "/" + ref.Namespace
			}
			return []any{name + "/" + ref.Name}
		},
	}
}

// serviceCIDRs are networking.k8s.io/v1 ServiceCIDRs with kube's validation and columns.
func serviceCIDRs() *registry.Resource {
	return &registry.Resource{GroupVersion: networkingv1.SchemeGroupVersion, Name: "servicecidrs", SingularName: "servicecidr", Kind: "ServiceCIDR",
		Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, New: registry.Of[networkingv1.ServiceCIDR](), NewList: registry.Of[networkingv1.ServiceCIDRList](),
		Validate: func(o runtime.Object) field.ErrorList {
			cidrs := o.(*networkingv1.ServiceCIDR).Spec.CIDRs
			p := field.NewPath("spec", "cidrs")
			var errs field.ErrorList
			switch {
			case len(cidrs) == 0:
				errs = append(errs, field.Required(p, "at least one CIDR required"))
			case len(cidrs) > 2:
				errs = append(errs, field.Invalid(p, cidrs, "may only hold up to 2 values"))
			}
			families := map[bool]bool{}
			for i, c := range cidrs {
				prefix, err := netip.ParsePrefix(c)
				if err != nil || prefix.Masked() != prefix {
					errs = append(errs, field.Invalid(p.Index(i), c, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
					continue
				}
				families[prefix.Addr().Is4()] = true
			}
			if len(cidrs) == 2 && len(families) == 1 {
				errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			now, prev := o.(*networkingv1.ServiceCIDR).Spec.CIDRs, old.(*networkingv1.ServiceCIDR).Spec.CIDRs
			// kube allows only adding a second family to a single-family ServiceCIDR.
			if len(prev) == 1 && len(now) == 2 && now[0] == prev[0] {
				return nil
			}
			if !apiequality.Semantic.DeepEqual(now, prev) {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "cidrs"), now, validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("CIDRs", "string", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"])},
		Cells: func(o runtime.Object) []any {
			return []any{strings.Join(o.(*networkingv1.ServiceCIDR).Spec.CIDRs, ",")}
		},
	}
}
