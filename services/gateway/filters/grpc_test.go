package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
)

// seenServer answers every call and notes the request info its handler saw.
type seenServer struct {
	resourcev1.UnimplementedResourceServiceServer
	seen chan requestinfo.RequestInfo
}

func (s *seenServer) note(ctx context.Context) {
	info, _ := requestinfo.From(ctx)
	s.seen <- *info
}

func (s *seenServer) Get(ctx context.Context, _ *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	s.note(ctx)
	return &resourcev1.GetResponse{}, nil
}

func (s *seenServer) Watch(req *resourcev1.WatchRequest, out grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	s.note(out.Context())
	return out.Send(&resourcev1.WatchResponse{Type: "ADDED"})
}

// A gRPC call is authorized as the request its message names, by the same rules and with the
// same 403 as the REST request; the handler and the HTTP filters around see that request.
func TestGRPCAuthorizationFromMessage(t *testing.T) {
	infoU, infoS := GRPCRequestInfo()
	// bob may get pods in ns, and watch one named p; nothing else.
	authzU, authzS := GRPCAuthorization(authorizerFunc(func(u *user.User, info *requestinfo.RequestInfo) (bool, string) {
		ok := u.Name == "bob" && info.IsResourceRequest && info.Resource == "pods" && info.Namespace == "ns" &&
			(info.Verb == "get" || info.Verb == "watch" && info.Name == "p")
		return ok, ""
	}))
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(infoU, authzU), grpc.ChainStreamInterceptor(infoS, authzS))
	backend := &seenServer{seen: make(chan requestinfo.RequestInfo, 10)}
	resourcev1.RegisterResourceServiceServer(srv, backend)
	afterwards := make(chan requestinfo.RequestInfo, 10)
	resolver := requestinfo.NewResolver()
	// What the HTTP chain does before: the user, and the request info of the path.
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := resolver.Resolve(r)
		require.NoError(t, err)
		ctx := user.WithUser(requestinfo.WithRequestInfo(r.Context(), info), &user.User{Name: "bob", Groups: []string{user.AllAuthenticated}})
		srv.ServeHTTP(w, r.WithContext(ctx))
		afterwards <- *info
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	conn, err := grpc.NewClient(strings.TrimPrefix(ts.URL, "https://"),
		grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, "")))
	require.NoError(t, err)
	defer conn.Close()
	client := resourcev1.NewResourceServiceClient(conn)
	ctx := context.Background()

	_, err = client.Get(ctx, &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "ns", Name: "p"}})
	require.NoError(t, err)
	seen := <-backend.seen
	assert.Equal(t, requestinfo.RequestInfo{IsResourceRequest: true, Path: "/apichain.resource.v1.ResourceService/Get", Verb: "get",
		APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p"}, seen)
	assert.Equal(t, seen, <-afterwards, "the filters around see the call's resource (the metrics label it)")

	_, err = client.Get(ctx, &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "secrets", Namespace: "ns", Name: "s"}})
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	kube := rpcstatus.ToKube(err)
	assert.EqualValues(t, http.StatusForbidden, kube.Code)
	assert.Equal(t, metav1.StatusReasonForbidden, kube.Reason)
	assert.Equal(t, `secrets "s" is forbidden: User "bob" cannot get resource "secrets" in API group "" in the namespace "ns"`, kube.Message)
	assert.Equal(t, &metav1.StatusDetails{Name: "s", Kind: "secrets"}, kube.Details)
	<-afterwards

	// A watch is described by its first message, which its handler still receives.
	w, err := client.Watch(ctx, &resourcev1.WatchRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "ns"},
		Options: &resourcev1.ListOptions{FieldSelector: "metadata.name=p"}})
	require.NoError(t, err)
	ev, err := w.Recv()
	require.NoError(t, err)
	assert.Equal(t, "ADDED", ev.GetType())
	seen = <-backend.seen
	assert.Equal(t, "watch", seen.Verb)
	assert.Equal(t, "p", seen.Name)
	assert.Equal(t, "metadata.name=p", seen.FieldSelector)
	<-afterwards
	w, err = client.Watch(ctx, &resourcev1.WatchRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "pods", Namespace: "ns"}})
	require.NoError(t, err)
	_, err = w.Recv()
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	assert.Equal(t, `pods is forbidden: User "bob" cannot watch resource "pods" in API group "" in the namespace "ns"`, rpcstatus.ToKube(err).Message)
}
