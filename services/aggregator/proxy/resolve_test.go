package proxy

import (
	"context"
	"net/http"
	"testing"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func slice(t discoveryv1.AddressType, port string, portNumber int32, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{discoveryv1.LabelServiceName: "s"}},
		AddressType: t, Endpoints: endpoints, Ports: []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To(portNumber)}}}
}

func endpoint(addr string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

// kube's choice: the Service port's name picks the slice port, not-ready endpoints are
// skipped, the Service's first family comes first, and localhost names are loopback.
func TestRandomEndpoint(t *testing.T) {
	notReady := ptr.To(false)
	list := []*discoveryv1.EndpointSlice{
		slice(discoveryv1.AddressTypeIPv4, "other", 9000, endpoint("10.0.0.9", nil)),
		slice(discoveryv1.AddressTypeIPv4, "https", 8443, endpoint("10.0.0.1", notReady), endpoint("10.0.0.2", nil)),
		slice(discoveryv1.AddressTypeIPv6, "https", 8443, endpoint("fd00::2", nil)),
	}
	for range 20 {
		got, err := randomEndpoint("s", list, "https", discoveryv1.AddressTypeIPv4)
		require.NoError(t, err)
		assert.Equal(t, "10.0.0.2:8443", got)
		got, err = randomEndpoint("s", list, "https", discoveryv1.AddressTypeIPv6)
		require.NoError(t, err)
		assert.Equal(t, "[fd00::2]:8443", got)
	}
	_, err := randomEndpoint("s", list[:1], "https", discoveryv1.AddressTypeIPv4)
	assert.EqualError(t, err, `no endpoints available for service "s"`)
	assert.ErrorIs(t, err, errNoEndpoints)

	got, err := randomEndpoint("s", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeFQDN, "", 8443, endpoint("wardle.localhost", nil))}, "", "")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8443", got)
	got, err = randomEndpoint("s", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeFQDN, "", 8443, endpoint("api.example.com", nil))}, "", "")
	require.NoError(t, err)
	assert.Equal(t, "api.example.com:8443", got)
}

func TestDNS(t *testing.T) {
	host, err := DNS{}.Resolve(context.Background(), &apiregistration.ServiceReference{Namespace: "ns", Name: "svc"})
	require.NoError(t, err)
	assert.Equal(t, "svc.ns.svc:443", host)
}

// The caller in front-proxy headers, as kube's aggregator writes them.
func TestFrontProxyHeaders(t *testing.T) {
	h := http.Header{}
	setFrontProxyHeaders(h, &user.User{Name: "bob", UID: "42", Groups: []string{"devs", "ops"},
		Extra: map[string][]string{"acme.com/project": {"p1", "p2"}, "scopes": {"read"}}})
	assert.Equal(t, []string{"bob"}, h.Values("X-Remote-User"))
	assert.Equal(t, []string{"42"}, h.Values("X-Remote-Uid"))
	assert.Equal(t, []string{"devs", "ops"}, h.Values("X-Remote-Group"))
	assert.Equal(t, []string{"p1", "p2"}, h.Values("X-Remote-Extra-Acme.com%2fproject"))
	assert.Equal(t, []string{"read"}, h.Values("X-Remote-Extra-Scopes"))
	assert.Equal(t, "acme.com%2Fproject%25", headerKeyEscape("acme.com/project%"))
}
