package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// API Priority and Fairness with kubectl and raw clients: kube's bootstrap configuration is
// there, each response names its FlowSchema and priority level, a FlowSchema naming a
// missing priority level is marked Dangling, and a user flooding a one-seat priority level
// gets 429 with Retry-After while the admin and another user are served; the debug dump and
// the metrics show the rejections.
func TestPriorityAndFairness(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("flooder-token,flooder,2001\ncalm-token,calm,2002\n"), 0o600))
	// 15 seats in all: the one-share level below gets one (kube: ceil(15·1/Σshares)).
	c, _ := startAllInOne(t, "--token-auth-file", tokens, "--max-requests-inflight=10", "--max-mutating-requests-inflight=5")
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	wh := startWebhookServer(t)
	dir := t.TempDir()
	apply := func(name, content string) {
		f := filepath.Join(dir, name+".yaml")
		writeFile(t, f, content)
		k.run("apply", "-f", f)
	}

	t.Run("bootstrap configuration", func(t *testing.T) {
		// The gateway's configuration consumer marks each FlowSchema (MISSINGPL "?" until then).
		var out string
		require.Eventually(t, func() bool {
			out = k.run("get", "flowschemas")
			return !strings.Contains(out, "?")
		}, 10*time.Second, 50*time.Millisecond, "FlowSchemas without status; last:\n%s", &out)
		for _, fs := range []string{"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
			"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default", "catch-all"} {
			assert.Regexp(t, `(?m)^`+fs+`\s+\S+\s+\d+\s+\S+\s+\S+\s+False$`, out, "FlowSchema %s with MISSINGPL False", fs)
		}
		out = k.run("get", "prioritylevelconfigurations")
		for _, pl := range []string{"exempt", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default", "catch-all"} {
			assert.Regexp(t, `(?m)^`+pl+`\s`, out)
		}
	})

	k.run("create", "clusterrolebinding", "apf-users", "--clusterrole=cluster-admin", "--user=flooder", "--user=calm")
	apply("tiny", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
`)
	apply("flooder", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flooder}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: tiny}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: flooder}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`)
	apply("dangling", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: dangling}
spec:
  matchingPrecedence: 600
  priorityLevelConfiguration: {name: nope}
  rules: [{subjects: [{kind: User, user: {name: nobody}}], nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]}]
`)

	t.Run("dangling", func(t *testing.T) {
		var out string
		require.Eventually(t, func() bool {
			out, _ = kubectl(t, k.kubeconfig, "get", "flowschema", "dangling", "-o", "jsonpath={.status.conditions}")
			return strings.Contains(out, "Dangling")
		}, 10*time.Second, 50*time.Millisecond, "no Dangling condition; last: %s", &out)
		var conds []flowcontrolv1.FlowSchemaCondition
		require.NoError(t, json.Unmarshal([]byte(out), &conds))
		require.Len(t, conds, 1)
		assert.Equal(t, flowcontrolv1.FlowSchemaCondition{Type: "Dangling", Status: "True", Reason: "NotFound",
			Message:            `This FlowSchema references the PriorityLevelConfiguration object named "nope" but there is no such object`,
			LastTransitionTime: conds[0].LastTransitionTime}, conds[0])
		assert.Regexp(t, `(?m)^dangling\s+nope\s+600\s+<none>\s+\S+\s+True$`, k.run("get", "flowschema", "dangling"))
	})

	uid := func(kind, name string) string { return k.run("get", kind, name, "-o", "jsonpath={.metadata.uid}") }
	flooder, calm := tokenHTTP(t, c, "flooder-token"), tokenHTTP(t, c, "calm-token")
	// classified answers GET path as hc and returns the FlowSchema and priority level UIDs.
	classified := func(hc *http.Client, path string) (int, string, string) {
		code, _, h := doGet(t, hc, c.base+path)
		return code, h.Get("X-Kubernetes-PF-FlowSchema-UID"), h.Get("X-Kubernetes-PF-PriorityLevel-UID")
	}

	t.Run("classification headers", func(t *testing.T) {
		code, fs, pl := classified(c.http, "/api/v1/namespaces/default")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, uid("flowschema", "exempt"), fs, "system:masters is exempt")
		assert.Equal(t, uid("prioritylevelconfiguration", "exempt"), pl)
		code, fs, pl = classified(calm, "/api/v1/namespaces/default")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, uid("flowschema", "global-default"), fs)
		assert.Equal(t, uid("prioritylevelconfiguration", "global-default"), pl)
		flooderFS, tinyPL := uid("flowschema", "flooder"), uid("prioritylevelconfiguration", "tiny")
		require.Eventually(t, func() bool {
			_, fs, pl = classified(flooder, "/api/v1/namespaces/default")
			return fs == flooderFS && pl == tinyPL
		}, 10*time.Second, 50*time.Millisecond, "the flooder's requests never reached tiny")
		_, metrics, _ := c.get("/metrics")
		assert.Regexp(t, `apiserver_flowcontrol_nominal_limit_seats\{priority_level="tiny"\} 1\n`, metrics)
	})

	t.Run("a flood is rejected, others are served", func(t *testing.T) {
		k.run("create", "namespace", "slow")
		k.run("label", "namespace", "slow", "slow=yes")
		apply("slow-webhook", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: slow}\nwebhooks:\n"+
			webhookYAML("slow.example.com", wh.url+"/slow", wh.caBundle,
				`[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
				`namespaceSelector: {matchLabels: {slow: "yes"}}`, "timeoutSeconds: 5", "failurePolicy: Ignore"))
		// The webhook configuration is in force once a create waits for the webhook.
		before := len(wh.received("/slow"))
		k.run("create", "configmap", "probe", "-n", "slow")
		require.Greater(t, len(wh.received("/slow")), before, "the slow webhook was not called")

		// One create holds tiny's only seat while the webhook keeps it waiting.
		held := make(chan int, 1)
		go func() { held <- postConfigMap(t, flooder, c.base, "slow", "held").code }()
		require.Eventually(t, func() bool {
			_, dump, _ := c.get("/debug/api_priority_and_fairness/dump_priority_levels")
			return regexp.MustCompile(`(?m)^tiny,\s*\S+,\s*\S+,\s*\S+,\s*0,\s*1,`).MatchString(dump)
		}, 10*time.Second, 20*time.Millisecond, "tiny never executed the held request")

		for i := range 5 {
			r := postConfigMap(t, flooder, c.base, "slow", fmt.Sprintf("flood-%d", i))
			assert.Equal(t, http.StatusTooManyRequests, r.code, "flood %d: %s", i, r.body)
			assert.Regexp(t, `^[1-9][0-9]*$`, r.header.Get("Retry-After"))
			var st metav1.Status
			require.NoError(t, json.Unmarshal([]byte(r.body), &st), r.body)
			assert.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason)
			assert.Equal(t, "Too many requests, please try again later.", st.Message)
			assert.Equal(t, uid("flowschema", "flooder"), r.header.Get("X-Kubernetes-PF-FlowSchema-UID"))
		}
		// gRPC calls are limited the same way: RESOURCE_EXHAUSTED with kube's Status and a RetryInfo.
		gctx, gcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer gcancel()
		var md metadata.MD
		_, err := resourcev1.NewResourceServiceClient(grpcTokenConn(t, c, "flooder-token")).Get(gctx,
			&resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Name: "default"}}, grpc.Header(&md))
		require.Error(t, err)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		kube := rpcstatus.ToKube(err)
		assert.EqualValues(t, http.StatusTooManyRequests, kube.Code)
		assert.Equal(t, "Too many requests, please try again later.", kube.Message)
		var retry *errdetails.RetryInfo
		for _, d := range status.Convert(err).Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		require.NotNil(t, retry, "a RetryInfo detail")
		assert.Positive(t, retry.GetRetryDelay().AsDuration())
		assert.Equal(t, []string{uid("flowschema", "flooder")}, md.Get("x-kubernetes-pf-flowschema-uid"))
		_, err = resourcev1.NewResourceServiceClient(grpcTokenConn(t, c, "calm-token")).Get(gctx,
			&resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Name: "default"}}, grpc.Header(&md))
		require.NoError(t, err)
		assert.Equal(t, []string{uid("flowschema", "global-default")}, md.Get("x-kubernetes-pf-flowschema-uid"))

		// Everyone else is served while the flooder's level is full.
		code, _, _ := classified(calm, "/api/v1/namespaces/slow/configmaps")
		assert.Equal(t, http.StatusOK, code)
		code, _, _ = classified(c.http, "/api/v1/namespaces/slow/configmaps")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, http.StatusCreated, <-held, "the held create is admitted once the webhook is ignored")

		_, dump, _ := c.get("/debug/api_priority_and_fairness/dump_priority_levels")
		assert.Regexp(t, `(?m)^tiny,(\s*\S+,){6}\s*6,`, dump, "six rejections (five REST, one gRPC) in the dump:\n%s", dump)
		_, metrics, _ := c.get("/metrics")
		assert.Regexp(t, `apiserver_flowcontrol_rejected_requests_total\{flow_schema="flooder",priority_level="tiny",reason="concurrency-limit"\} 6\n`, metrics)
		k.fails("get", "configmap", "flood-0", "-n", "slow")
	})

	t.Run("gRPC calls are classified", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs := resourcev1.NewResourceServiceClient(grpcConn(t, c, true))
		var md metadata.MD
		_, err := rs.Get(ctx, &resourcev1.GetRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Name: "default"}}, grpc.Header(&md))
		require.NoError(t, err)
		assert.Equal(t, []string{uid("flowschema", "exempt")}, md.Get("x-kubernetes-pf-flowschema-uid"))
		assert.Equal(t, []string{uid("prioritylevelconfiguration", "exempt")}, md.Get("x-kubernetes-pf-prioritylevel-uid"))
		// A watch is classified from its request and, once open, streams.
		w, err := resourcev1.NewResourceServiceClient(grpcTokenConn(t, c, "calm-token")).Watch(ctx,
			&resourcev1.WatchRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "slow"}})
		require.NoError(t, err)
		hd, err := w.Header()
		require.NoError(t, err)
		assert.Equal(t, []string{uid("flowschema", "global-default")}, hd.Get("x-kubernetes-pf-flowschema-uid"))
		_, err = w.Recv()
		require.NoError(t, err, "the watch delivers the namespace's configmaps")
	})

	t.Run("debug endpoints need authorization", func(t *testing.T) {
		code, _, _ := doGet(t, c.anonymous(), c.base+"/debug/api_priority_and_fairness/dump_queues")
		assert.Equal(t, http.StatusForbidden, code)
	})
}

// tokenHTTP is an HTTP client for the server of c that authenticates with a bearer token.
func tokenHTTP(t testing.TB, c *client, token string) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(&rest.Config{Host: c.base, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}, Timeout: 30 * time.Second})
	require.NoError(t, err)
	return hc
}

type response struct {
	code   int
	body   string
	header http.Header
}

// postConfigMap creates ConfigMap ns/name with hc, as JSON.
func postConfigMap(t testing.TB, hc *http.Client, base, ns, name string) response {
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, name)
	resp, err := hc.Post(base+"/api/v1/namespaces/"+ns+"/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		return response{body: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: string(raw), header: resp.Header}
}

// grpcTokenConn is a gRPC connection to c's gateway that authenticates with a bearer token.
func grpcTokenConn(t *testing.T, c *client, token string) *grpc.ClientConn {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
	require.NoError(t, err)
	u, err := url.Parse(c.base)
	require.NoError(t, err)
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithPerRPCCredentials(bearerToken(token)))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerToken) RequireTransportSecurity() bool { return true }
