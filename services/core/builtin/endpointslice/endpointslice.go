package endpointslice

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// endpointSlices are discovery.k8s.io/v1 EndpointSlices with kube's validation and columns.
func endpointSlices() *registry.Resource {
	return &registry.Resource{GroupVersion: discoveryv1.SchemeGroupVersion, Name: "endpointslices", SingularName: "endpointslice",
		Kind: "EndpointSlice", Namespaced: true,
		New: registry.Of[discoveryv1.EndpointSlice](), NewList: registry.Of[discoveryv1.EndpointSliceList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validateEndpointSlice(o.(*discoveryv1.EndpointSlice), nil)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			es, prev := o.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
			errs := validateEndpointSlice(es, prev)
			if es.AddressType != prev.AddressType {
				errs = append(errs, field.Invalid(field.NewPath("addressType"), nil, validate.FieldImmutableErrorMsg)) // kube's declarative validation reports no value
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("AddressType", "string", "The type of addresses in this EndpointSlice."),
			registry.Column("Ports", "string", "The ports exposed by this EndpointSlice."),
			registry.Column("Endpoints", "string", "The addresses of the endpoints in this EndpointSlice."),
		},
		Cells: func(o runtime.Object) []any {
			es := o.(*discoveryv1.EndpointSlice)
			var ports, addrs []string
			for _, p := range es.Ports {
				switch {
				case p.Port != nil:
					ports = append(ports, strconv.Itoa(int(*p.Port)))
				case p.Name != nil:
					ports = append(ports, *p.Name)
				default:
					ports = append(ports, "*")
				}
			}
			for _, e := range es.Endpoints {
				addrs = append(addrs, e.Addresses...)
			}
			return []any{string(es.AddressType), listWithMore(ports), listWithMore(addrs)}
		},
	}
}

// listWithMore is kube's: three items, then "+ N more...", "<unset>" for none.
func listWithMore(list []string) string {
	if len(list) > 3 {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:3], ","), len(list)-3)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}

var (
	endpointAddressTypes = sets.New(string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), string(discoveryv1.AddressTypeFQDN))
	endpointProtocols    = sets.New(string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP))
)

// validateEndpointSlice is kube's (endpoints an update leaves as they were are not checked).
func validateEndpointSlice(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	switch {
	case es.AddressType == "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	case !endpointAddressTypes.Has(string(es.AddressType)):
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), es.AddressType, sets.List(endpointAddressTypes)))
	}
	pp := field.NewPath("ports")
	if len(es.Ports) > 20000 {
		errs = append(errs, field.TooMany(pp, len(es.Ports), 20000))
	} else {
		names := sets.New[string]()
		for i, p := range es.Ports {
			q := pp.Index(i)
			name := ptr.Deref(p.Name, "")
			if name != "" {
				errs = append(errs, validate.InvalidEach(q.Child("name"), name, validation.IsDNS1123Label(name))...)
			}
			if names.Has(name) {
				errs = append(errs, field.Duplicate(q.Child("name"), p.Name))
			}
			names.Insert(name)
			if p.Protocol == nil {
				errs = append(errs, field.Required(q.Child("protocol"), ""))
			} else if !endpointProtocols.Has(string(*p.Protocol)) {
				errs = append(errs, field.NotSupported(q.Child("protocol"), *p.Protocol, sets.List(endpointProtocols)))
			}
			if p.AppProtocol != nil {
				errs = append(errs, validate.InvalidEach(q.Child("appProtocol"), *p.AppProtocol, validation.IsQualifiedName(*p.AppProtocol))...)
			}
		}
	}
	if old != nil && fmt.Sprint(old.Endpoints) == fmt.Sprint(es.Endpoints) {
		return errs
	}
	ep := field.NewPath("endpoints")
	if len(es.Endpoints) > 1000 {
		return append(errs, field.TooMany(ep, len(es.Endpoints), 1000))
	}
	for i, e := range es.Endpoints {
		q := ep.Index(i)
		ap := q.Child("addresses")
		if len(e.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		} else if len(e.Addresses) > 100 {
			errs = append(errs, field.TooMany(ap, len(e.Addresses), 100))
		}
		for j, a := range e.Addresses {
			switch es.AddressType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				ipErrs := validation.IsValidIPForLegacyField(ap.Index(j), a, false, nil)
				if es.AddressType == discoveryv1.AddressTypeIPv6 {
					ipErrs = validation.IsValidIP(ap.Index(j), a)
				}
				if len(ipErrs) > 0 {
					errs = append(errs, ipErrs...)
					continue
				}
				ip := net.ParseIP(a)
				if es.AddressType == discoveryv1.AddressTypeIPv4 && (ip == nil || ip.To4() == nil) {
					errs = append(errs, field.Invalid(ap, a, "must be an IPv4 address"))
				}
				if es.AddressType == discoveryv1.AddressTypeIPv6 && (ip == nil || ip.To4() != nil) {
					errs = append(errs, field.Invalid(ap, a, "must be an IPv6 address"))
				}
				errs = append(errs, validateEndpointIP(a, ap.Index(j))...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(ap.Index(j), a)...)
			}
		}
		if e.NodeName != nil {
			errs = append(errs, validate.InvalidEach(q.Child("nodeName"), *e.NodeName, validation.IsDNS1123Subdomain(*e.NodeName))...)
		}
		tp := q.Child("deprecatedTopology")
		if len(e.DeprecatedTopology) > 16 {
			errs = append(errs, field.TooMany(tp, len(e.DeprecatedTopology), 16))
		}
		errs = append(errs, metav1validation.ValidateLabels(e.DeprecatedTopology, tp)...)
		if e.Hostname != nil {
			errs = append(errs, validate.InvalidEach(q.Child("hostname"), *e.Hostname, validation.IsDNS1123Label(*e.Hostname))...)
		}
		if h := e.Hints; h != nil {
			errs = append(errs, validateHints(h, q.Child("hints"))...)
		}
	}
	return errs
}

func validateEndpointIP(a string, p *field.Path) field.ErrorList {
	ip := net.ParseIP(a)
	if ip == nil {
		return field.ErrorList{field.Invalid(p, a, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, a, fmt.Sprintf("may not be unspecified (%v)", a)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, a, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, a, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, a, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	zones := make([]string, len(h.ForZones))
	for i, z := range h.ForZones {
		zones[i] = z.Name
	}
	errs, tooMany := validateHintNames(zones, validation.IsValidLabelValue, p.Child("forZones"))
	if tooMany {
		return errs
	}
	nodes := make([]string, len(h.ForNodes))
	for i, n := range h.ForNodes {
		nodes[i] = n.Name
	}
	more, _ := validateHintNames(nodes, validation.IsDNS1123Subdomain, p.Child("forNodes"))
	return append(errs, more...)
}

// validateHintNames checks a hint list: at most 8, each name once and valid; tooMany says
// kube stops there.
func validateHintNames(names []string, valid func(string) []string, p *field.Path) (field.ErrorList, bool) {
	if len(names) > 8 {
		return field.ErrorList{field.TooMany(p, len(names), 8)}, true
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range names {
		q := p.Index(i).Child("name")
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(q, name))
		}
		seen.Insert(name)
		errs = append(errs, validate.InvalidEach(q, name, valid(name))...)
	}
	return errs, false
}
