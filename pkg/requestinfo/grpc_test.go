package requestinfo

import (
	"net/http/httptest"
	"testing"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// A ResourceService call is authorized, limited and audited as the REST request it stands for:
// its request info is the HTTP resolver's for that request, but for the path.
func TestResolveGRPCAsREST(t *testing.T) {
	pods := &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "ns"}
	pod := &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "ns", Name: "p"}
	status := &resourcev1.ResourceRef{Group: "apps", Version: "v1", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "d"}
	nodes := &resourcev1.ResourceRef{Version: "v1", Resource: "nodes"}
	crs := &resourcev1.ResourceRef{Group: "example.com", Version: "v1", Resource: "widgets"}
	cases := []struct {
		method, rest, target string
		msg                  any
	}{
		{"Get", "GET", "/api/v1/namespaces/ns/pods/p", &resourcev1.GetRequest{Ref: pod}},
		{"Get", "GET", "/api/v1/namespaces/ns/pods", &resourcev1.GetRequest{Ref: pods}},
		{"Get", "GET", "/apis/apps/v1/namespaces/ns/deployments/d/status", &resourcev1.GetRequest{Ref: status}},
		{"List", "GET", "/api/v1/namespaces/ns/pods", &resourcev1.ListRequest{Ref: pods}},
		{"List", "GET", "/api/v1/nodes?labelSelector=a%3Db&fieldSelector=spec.unschedulable%3Dfalse",
			&resourcev1.ListRequest{Ref: nodes, Options: &resourcev1.ListOptions{LabelSelector: "a=b", FieldSelector: "spec.unschedulable=false"}}},
		{"StreamList", "GET", "/api/v1/nodes?labelSelector=a%3Db", &resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: nodes,
			Options: &resourcev1.ListOptions{LabelSelector: "a=b"}}}},
		{"StreamList", "GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp", &resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: pods,
			Options: &resourcev1.ListOptions{FieldSelector: "metadata.name=p"}}}},
		// One object's list or watch by its name: authorized as that object's.
		{"List", "GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp",
			&resourcev1.ListRequest{Ref: pods, Options: &resourcev1.ListOptions{FieldSelector: "metadata.name=p"}}},
		{"Watch", "GET", "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Dp",
			&resourcev1.WatchRequest{Ref: pods, Options: &resourcev1.ListOptions{FieldSelector: "metadata.name=p"}}},
		{"Watch", "GET", "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3D..",
			&resourcev1.WatchRequest{Ref: pods, Options: &resourcev1.ListOptions{FieldSelector: "metadata.name=.."}}},
		{"Watch", "GET", "/apis/example.com/v1/widgets?watch=1", &resourcev1.WatchRequest{Ref: crs}},
		{"Create", "POST", "/api/v1/namespaces/ns/pods", &resourcev1.CreateRequest{Ref: pods}},
		{"Update", "PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status", &resourcev1.UpdateRequest{Ref: status}},
		{"Patch", "PATCH", "/api/v1/namespaces/ns/pods/p", &resourcev1.PatchRequest{Ref: pod}},
		{"Delete", "DELETE", "/api/v1/namespaces/ns/pods/p", &resourcev1.DeleteRequest{Ref: pod}},
		{"DeleteCollection", "DELETE", "/api/v1/namespaces/ns/pods?labelSelector=x&fieldSelector=metadata.name%3Dp",
			&resourcev1.DeleteCollectionRequest{Ref: pods, ListOptions: &resourcev1.ListOptions{LabelSelector: "x", FieldSelector: "metadata.name=p"}}},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			want, err := NewResolver().Resolve(httptest.NewRequest(c.rest, c.target, nil))
			require.NoError(t, err)
			fullMethod := "/" + resourcev1.ResourceService_ServiceDesc.ServiceName + "/" + c.method
			got := ResolveGRPC(fullMethod, c.msg)
			assert.Equal(t, fullMethod, got.Path)
			want.Path, want.Parts = got.Path, nil
			assert.Equal(t, want, got)
		})
	}
}

func TestResolveGRPCOtherCalls(t *testing.T) {
	assert.Equal(t, &RequestInfo{Path: "/apis/apps/v1", Verb: "get"},
		ResolveGRPC(discoveryv1.DiscoveryService_GetDocument_FullMethodName, &discoveryv1.GetDocumentRequest{Path: "/apis/apps/v1"}))
	assert.Equal(t, &RequestInfo{Path: "/debug/lifecycle/v1/instances", Verb: "get"},
		ResolveGRPC(lifecyclev1.LifecycleService_ListInstanceStates_FullMethodName, &lifecyclev1.ListInstanceStatesRequest{}))
	assert.Equal(t, &RequestInfo{Path: "/readyz", Verb: "get"},
		ResolveGRPC(healthpb.Health_Check_FullMethodName, &healthpb.HealthCheckRequest{}))
	assert.Equal(t, &RequestInfo{Path: "/openapi/grpc", Verb: "get"},
		ResolveGRPC(reflectionpb.ServerReflection_ServerReflectionInfo_FullMethodName, nil))
	// What has no REST twin is what the HTTP resolver makes of the call: a POST to its path.
	for method, msg := range map[string]any{
		lifecyclev1.LifecycleService_GetInstanceState_FullMethodName:             &lifecyclev1.GetInstanceStateRequest{},
		discoveryv1.DiscoveryService_GetDocument_FullMethodName:                  &resourcev1.GetRequest{}, // the wrong message
		"/" + resourcev1.ResourceService_ServiceDesc.ServiceName + "/Frobnicate": &resourcev1.GetRequest{},
		"/other.Service/Get": &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods"}},
	} {
		assert.Equal(t, &RequestInfo{Path: method, Verb: "post"}, ResolveGRPC(method, msg), method)
		want, err := NewResolver().Resolve(httptest.NewRequest("POST", method, nil))
		require.NoError(t, err)
		want.Parts = nil
		assert.Equal(t, want, ResolveGRPC(method, msg), method)
	}
}
