package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// grpcTLS is the TLS of a gRPC client of the gateway: its CA, and the admin's certificate
// withCert.
func grpcTLS(t *testing.T, c *client, withCert bool) *tls.Config {
	t.Helper()
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}}
	if withCert {
		cfg.CertData, cfg.KeyData = c.config.CertData, c.config.KeyData
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	require.NoError(t, err)
	return tlsCfg
}

func grpcConn(t *testing.T, c *client, withCert bool) *grpc.ClientConn {
	t.Helper()
	u, err := url.Parse(c.base)
	require.NoError(t, err)
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(credentials.NewTLS(grpcTLS(t, c, withCert))))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// gRPC clients use the gateway's HTTPS port, pass the same filters, and reach the chain.
func TestGRPCOnGatewayPort(t *testing.T) {
	c, _ := startAllInOne(t)
	conn := grpcConn(t, c, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	hr, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "gateway"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, hr.GetStatus())

	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
	rr, err := refl.Recv()
	require.NoError(t, err)
	var services []string
	for _, s := range rr.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	assert.Subset(t, services, []string{"apichain.resource.v1.ResourceService", "apichain.discovery.v1.DiscoveryService",
		"apichain.lifecycle.v1.LifecycleService", "grpc.health.v1.Health"})
	require.NoError(t, refl.CloseSend())

	states, err := lifecyclev1.NewLifecycleServiceClient(conn).ListInstanceStates(ctx, &lifecyclev1.ListInstanceStatesRequest{})
	require.NoError(t, err)
	assert.Equal(t, "nats", states.GetSource())
	seen := map[string]bool{}
	for _, st := range states.GetStates() {
		seen[st.GetService()] = st.GetReady()
	}
	assert.Equal(t, map[string]bool{"gateway": true, "aggregator": true, "core": true, "extensions": true}, seen)

	// Nothing serves this resource: the end of the chain is kube's 404, as a Status detail.
	_, err = resourcev1.NewResourceServiceClient(conn).Get(ctx, &resourcev1.GetRequest{
		Ref: &resourcev1.ResourceRef{Group: "no.such.group", Version: "v1", Resource: "things", Name: "x"}})
	require.Error(t, err)
	assert.Equal(t, codes.NotFound, status.Code(err))
	kube := rpcstatus.ToKube(err)
	assert.EqualValues(t, 404, kube.Code)
	assert.Equal(t, "NotFound", string(kube.Reason))

	// Discovery for the whole chain, as REST answers it: merged /apis, a group/version of any
	// backend, aggregated discovery, OpenAPI.
	disco := discoveryv1.NewDiscoveryServiceClient(conn)
	for _, d := range []struct{ path, accept string }{
		{"/apis", "application/json"},
		{"/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{"/api/v1", "application/json"},
		{"/apis/apiextensions.k8s.io/v1", "application/json"},
		{"/apis/apiregistration.k8s.io/v1", "application/json"},
		{"/openapi/v3/apis/apps/v1", "application/json"},
	} {
		doc, err := disco.GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: d.path, Accept: d.accept})
		require.NoError(t, err, d.path)
		req, err := http.NewRequest(http.MethodGet, c.base+d.path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", d.accept)
		resp, err := c.http.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, resp.Header.Get("Content-Type"), doc.GetContentType(), d.path)
		assert.JSONEq(t, string(body), string(doc.GetData()), d.path)
	}
	_, err = disco.GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/apis/no.such.group/v1"})
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	assert.EqualValues(t, 404, rpcstatus.ToKube(err).Code)
	_, err = disco.GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/api/v1/namespaces"})
	assert.Equal(t, codes.NotFound, status.Code(err), "a resource is not a document: %v", err)
	_, err = disco.GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/healthz"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)

	// A write names no field manager: kube's default, the client's User-Agent up to the "/"
	// (a REST client's the same way).
	named, err := grpc.NewClient(strings.TrimPrefix(c.base, "https://"), grpc.WithTransportCredentials(credentials.NewTLS(grpcTLS(t, c, true))),
		grpc.WithUserAgent("apichain-e2e/1.0"))
	require.NoError(t, err)
	defer named.Close()
	_, err = resourcev1.NewResourceServiceClient(named).Create(ctx, &resourcev1.CreateRequest{
		Ref:  &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "default"},
		Body: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-grpc"},"data":{"a":"b"}}`)},
	})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, c.base+"/api/v1/namespaces/default/configmaps", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-rest"},"data":{"a":"b"}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "some-tool/2.0 (linux)")
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	for name, manager := range map[string]string{"by-grpc": "apichain-e2e", "by-rest": "some-tool"} {
		code, body, _ := c.get("/api/v1/namespaces/default/configmaps/" + name)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, `"managedFields":[{"manager":"`+manager+`","operation":"Update"`, name)
	}

	// Without a client certificate the gRPC call is system:anonymous, whom RBAC denies, as it
	// would an HTTP request: a gRPC status, with kube's Status in its details, not a
	// transport error.
	anonymous := grpcConn(t, c, false)
	_, err = lifecyclev1.NewLifecycleServiceClient(anonymous).ListInstanceStates(ctx, &lifecyclev1.ListInstanceStatesRequest{})
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	denied := rpcstatus.ToKube(err)
	assert.EqualValues(t, 403, denied.Code)
	assert.Equal(t, metav1.StatusReasonForbidden, denied.Reason)
	assert.Contains(t, denied.Message, `User "system:anonymous" cannot`)
	assert.NotContains(t, err.Error(), "unexpected HTTP status code")
	// A token that is not one: UNAUTHENTICATED, kube's 401.
	bad := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer not-a-token")
	_, err = resourcev1.NewResourceServiceClient(anonymous).Get(bad, &resourcev1.GetRequest{
		Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Name: "default"}})
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	assert.EqualValues(t, 401, rpcstatus.ToKube(err).Code)
	assert.Equal(t, metav1.StatusReasonUnauthorized, rpcstatus.ToKube(err).Reason)
}

// A gRPC watch whose backend dies ends with an error status the client can act on, not as if
// the watch had finished.
func TestGRPCWatchBackendDies(t *testing.T) {
	c := startCluster(t)
	conn := grpcConn(t, c.client, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := resourcev1.NewResourceServiceClient(conn).Watch(ctx, &resourcev1.WatchRequest{
		Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "default"}, SendInitialEvents: true, AllowWatchBookmarks: true,
		Options: &resourcev1.ListOptions{ResourceVersionMatch: "NotOlderThan"}})
	require.NoError(t, err)
	for {
		ev, err := w.Recv()
		require.NoError(t, err)
		if ev.GetType() == "BOOKMARK" { // the initial events are through: the watch is open
			break
		}
	}
	c.backends["core"].signal(syscall.SIGKILL)
	for {
		_, err = w.Recv()
		if err != nil {
			break
		}
	}
	assert.NotErrorIs(t, err, io.EOF, "the watch must not look finished")
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
}

// A unary gRPC call in flight when the gateway is told to stop is drained, as a REST request
// is: here a create held 4 s by a webhook that does not answer (failurePolicy Ignore). A new
// call after the shutdown delay is UNAVAILABLE (try another replica), in kube's words.
func TestGRPCUnaryDrainedAtShutdown(t *testing.T) {
	hooks := startWebhookServer(t)
	c, p := startAllInOne(t, "--shutdown-delay-duration", "1s", "--shutdown-send-retry-after")
	admin := kc{t: t, kubeconfig: filepath.Join(c.dataDir(), "admin.kubeconfig")}
	config := filepath.Join(t.TempDir(), "slow.yaml")
	writeFile(t, config, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: slow}\nwebhooks:\n"+
		webhookYAML("slow.example.com", hooks.url+"/slow", hooks.caBundle,
			`[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			"timeoutSeconds: 4", "failurePolicy: Ignore", `objectSelector: {matchLabels: {slow: "yes"}}`))
	admin.run("apply", "-f", config)
	// The configuration is in effect once a labelled create reaches the webhook.
	probes := 0
	require.Eventually(t, func() bool {
		probes++
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe-%d","labels":{"slow":"yes"}}}`, probes)
		resp, err := c.http.Post(c.base+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		return len(hooks.received("/slow")) > 0
	}, 30*time.Second, 100*time.Millisecond)
	seen := len(hooks.received("/slow"))
	conn := grpcConn(t, c, true)
	done := make(chan error, 1)
	go func() {
		_, err := resourcev1.NewResourceServiceClient(conn).Create(context.Background(), &resourcev1.CreateRequest{
			Ref:  &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "default"},
			Body: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"drained","labels":{"slow":"yes"}}}`)},
		})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(hooks.received("/slow")) > seen }, 20*time.Second, 20*time.Millisecond,
		"the create reaches the webhook")
	p.signal(sigterm)
	late := grpcConn(t, c, true)
	var lateErr error
	require.Eventually(t, func() bool {
		_, lateErr = resourcev1.NewResourceServiceClient(late).Get(context.Background(), &resourcev1.GetRequest{
			Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Name: "default"}})
		return lateErr != nil
	}, 10*time.Second, 50*time.Millisecond, "new calls are turned away after the shutdown delay")
	assert.Equal(t, codes.Unavailable, status.Code(lateErr), "%v", lateErr)
	assert.Equal(t, "The apiserver is shutting down, please try again later.", status.Convert(lateErr).Message())
	select {
	case err := <-done:
		assert.NoError(t, err, "the call in flight completes")
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight never ended")
	}
	assert.Equal(t, 0, p.wait(30*time.Second))
}
