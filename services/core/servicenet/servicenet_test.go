package servicenet

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRandomIPStaysInsideTheUsableRange(t *testing.T) {
	for _, cidr := range []string{"10.0.0.0/24", "10.96.0.0/12", "192.168.7.0/30", "fd00:10:96::/108", "fd00::/64"} {
		p := netip.MustParsePrefix(cidr)
		last := p.Addr()
		for a := p.Addr(); p.Contains(a) && a.BitLen()-p.Bits() <= 16; a = a.Next() {
			last = a
		}
		for range 2000 {
			ip := randomIP(p)
			if !p.Contains(ip) {
				t.Fatalf("%s: %s is outside", cidr, ip)
			}
			if ip == p.Addr() || ip == p.Addr().Next() {
				t.Fatalf("%s: %s is the network address or the kubernetes Service's", cidr, ip)
			}
			if p.Addr().BitLen()-p.Bits() <= 16 && ip == last {
				t.Fatalf("%s: %s is the last address", cidr, ip)
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		ranges, ports string
		ok            bool
	}{
		{"10.0.0.0/24", "30000-32767", true},
		{"10.0.0.0/24,fd00::/108", "30000-32767", true},
		{"10.0.0.0/24,10.1.0.0/24", "30000-32767", false}, // two of one family
		{"10.0.0.1/24", "30000-32767", false},             // not a network address
		{"10.0.0.0/31", "30000-32767", false},             // too small
		{"10.0.0.0/24", "32767-30000", false},
		{"10.0.0.0/24", "30000", false},
	} {
		_, err := (&Options{ClusterIPRanges: tc.ranges, NodePortRange: tc.ports}).Parse()
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q, %q): err %v, want ok %v", tc.ranges, tc.ports, err, tc.ok)
		}
	}
}

// The default/kubernetes endpoints list the gateways' addresses that an Endpoints may hold,
// sorted and once each, with the port most of them share; the slice keeps one family.
func TestEndpointAddresses(t *testing.T) {
	e := NewEndpointAddresses(nil, func() []string {
		return []string{"10.0.0.9:6443", "[::]:6443", "127.0.0.1:6443", "10.0.0.2:6443", "[fd00::5]:6443",
			"169.254.1.1:6443", "not an address", "10.0.0.9:6443", "[::ffff:10.0.0.3]:7443"}
	})
	ips, port := e.endpoints()
	got := make([]string, 0, len(ips))
	for _, ip := range ips {
		got = append(got, ip.String())
	}
	if want := "[10.0.0.2 10.0.0.3 10.0.0.9 fd00::5]"; fmt.Sprint(got) != want || port != 6443 {
		t.Fatalf("endpoints: %v port %d, want %s port 6443", got, port, want)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}}}}}
	s := sliceOf(ep, ips)
	if s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Endpoints) != 3 || s.Labels[discoveryv1.LabelServiceName] != "kubernetes" {
		t.Fatalf("slice: %+v", s)
	}
	if v6 := sliceOf(ep, ips[3:]); v6.AddressType != discoveryv1.AddressTypeIPv6 || len(v6.Endpoints) != 1 || v6.Endpoints[0].Addresses[0] != "fd00::5" {
		t.Fatalf("IPv6 slice: %+v", v6)
	}
}
