package servicenet

import (
	"net/netip"
	"testing"
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
