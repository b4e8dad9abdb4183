package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/apichain/apichain/pkg/tracing/tracingtest"
)

// Tracing as kube-apiserver traces (--tracing-config-file; sampling 0 per million, so only a
// caller's sampled trace is traced): the admin creates a ConfigMap through a mutating webhook
// with a W3C traceparent, and one trace, the client's, holds the gateway's request span as the
// child of the client's span, kube's filter spans under it, the gRPC hop into core, the
// webhook call (which carries the trace on to the webhook) and core's etcd calls, each under
// the one before. A request without a traceparent is not traced at all.
func TestTracingAcrossProcesses(t *testing.T) {
	recv := tracingtest.Start(t)
	cfg := filepath.Join(t.TempDir(), "tracing.yaml")
	writeFile(t, cfg, "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+recv.Addr+"\nsamplingRatePerMillion: 0\n")
	c, _ := startAllInOne(t, "--tracing-config-file", cfg)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	wh := startWebhookServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mutating.yaml"), "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: traced}\nwebhooks:\n"+
		webhookYAML("mutate.example.com", wh.url+"/mutate", wh.caBundle, `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			"objectSelector: {matchLabels: {traced: \"yes\"}}"))
	k.run("apply", "-f", filepath.Join(dir, "mutating.yaml"))
	k.run("create", "namespace", "traced")

	hc, err := rest.HTTPClientFor(c.config)
	require.NoError(t, err)
	create := func(name, traceparent string) string {
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"traced":"yes"}}}`
		req, err := http.NewRequest(http.MethodPost, c.base+"/api/v1/namespaces/traced/configmaps", bytes.NewBufferString(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		return resp.Header.Get("Audit-Id")
	}
	// The webhook configuration applies within a second: wait until a create is mutated.
	require.Eventually(t, func() bool {
		create("probe-"+randomHex(t, 4), "")
		return len(wh.received("/mutate")) > 0
	}, 20*time.Second, 100*time.Millisecond)

	traceID, clientSpan := randomHex(t, 16), randomHex(t, 8)
	auditID := create("traced", "00-"+traceID+"-"+clientSpan+"-01")

	var spans []tracingtest.Span
	find := func(service, name string) *tracingtest.Span {
		for i := range spans {
			if spans[i].Resource["apichain.service"] == service && spans[i].Name == name {
				return &spans[i]
			}
		}
		return nil
	}
	const etcdWrite = "etcdserverpb.KV/Txn"
	require.Eventually(t, func() bool {
		spans = recv.Trace(traceID)
		return find("core", etcdWrite) != nil && find("core", "Call mutating webhook") != nil && find("gateway", "POST /api/v1/namespaces/{:namespace}/configmaps") != nil
	}, 30*time.Second, 100*time.Millisecond, "the trace reaches core's etcd write; spans so far: %v", names(recv.Trace(traceID)))

	// ancestor says whether a is s or one of its parents, in this trace.
	byID := map[string]tracingtest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	ancestor := func(a, s *tracingtest.Span) bool {
		for id := s.SpanID; id != ""; id = byID[id].ParentSpanID {
			if id == a.SpanID {
				return true
			}
		}
		return false
	}

	t.Logf("the trace's spans: %v", names(spans))
	request := find("gateway", "POST /api/v1/namespaces/{:namespace}/configmaps")
	assert.Equal(t, clientSpan, request.ParentSpanID, "the admin's traceparent is the parent of the gateway's request span")
	assert.Equal(t, "apiserver", request.Resource["service.name"])
	assert.Equal(t, auditID, request.Attributes["audit-id"])
	assert.Equal(t, "/api/v1/namespaces/traced/configmaps", request.Attributes["http.target"])
	prev := request
	for _, filter := range []string{"audit", "impersonation", "priorityandfairness", "authorization"} {
		s := find("gateway", filter)
		require.NotNil(t, s, "kube's %s filter span", filter)
		assert.True(t, ancestor(prev, s), "%s runs inside %s", filter, prev.Name)
		prev = s
	}
	var hop, served *tracingtest.Span
	for i := range spans {
		s := &spans[i]
		if strings.Contains(s.Name, "ResourceService/") {
			switch s.Resource["apichain.service"] {
			case "gateway":
				hop = s
			case "core":
				served = s
			}
		}
	}
	require.NotNil(t, hop, "the gateway's gRPC call to core")
	require.NotNil(t, served, "core's gRPC handling of it")
	assert.True(t, ancestor(request, hop), "the gRPC hop is inside the request")
	assert.Equal(t, hop.SpanID, served.ParentSpanID, "core's span is the child of the gateway's call")
	webhook := find("core", "Call mutating webhook")
	assert.True(t, ancestor(served, webhook), "the webhook call is inside core's handling")
	assert.Equal(t, "mutate.example.com", webhook.Attributes["webhook"])
	assert.Equal(t, "traced", webhook.Attributes["configuration"])
	assert.Equal(t, "CREATE", webhook.Attributes["operation"])
	write := find("core", etcdWrite)
	assert.True(t, ancestor(served, write), "the etcd write is inside core's handling")
	// Inside core's gRPC span, kube's handler span, with kube's events for decoding, storing
	// and responding; each admission step's span (the webhook call inside the mutating one);
	// and kube's storage span around the etcd client's call.
	handler := find("core", "Create")
	require.NotNil(t, handler, "kube's Create handler span")
	assert.Equal(t, served.SpanID, handler.ParentSpanID, "the handler span is the child of core's gRPC span")
	assert.Equal(t, auditID, handler.Attributes["audit-id"])
	assert.Equal(t, "configmaps", handler.Attributes["resource"])
	assert.Equal(t, "resource", handler.Attributes["scope"])
	assert.Subset(t, handler.Events, []string{"About to convert to expected version", "Conversion done", "About to store object in database",
		"Write to database call succeeded", "About to write a response"})
	mutating, validating := find("core", "Mutating admission"), find("core", "Validating admission")
	require.NotNil(t, mutating, "the mutating admission step's span")
	require.NotNil(t, validating, "the validating admission step's span")
	assert.True(t, ancestor(handler, mutating) && ancestor(handler, validating), "admission runs inside the handler")
	assert.True(t, ancestor(mutating, webhook), "the webhook call is inside mutating admission")
	assert.Equal(t, "CREATE", mutating.Attributes["operation"])
	stored := find("core", "Create etcd3")
	require.NotNil(t, stored, "kube's storage span")
	assert.True(t, ancestor(handler, stored), "the storage call is inside the handler")
	assert.True(t, ancestor(stored, write), "the etcd client's call is inside the storage span")
	assert.Equal(t, "configmaps", stored.Attributes["resource"])
	assert.Contains(t, stored.Attributes["key"], "/traced/traced")
	assert.Contains(t, stored.Events, "Txn call succeeded")
	assert.True(t, slices.ContainsFunc(wh.receivedTraceparents("/mutate"), func(tp string) bool { return strings.Contains(tp, traceID) }),
		"the webhook received the trace context")

	// Without a traceparent (sampling 0) nothing is recorded for a request: the probes and
	// one more create are not in any trace. A traced get after them marks when the gateway's
	// spans up to it have been exported (one exporter, in order).
	create("untraced", "")
	marker := randomHex(t, 16)
	req, err := http.NewRequest(http.MethodGet, c.base+"/api/v1/namespaces/traced/configmaps/untraced", nil)
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-"+marker+"-"+randomHex(t, 8)+"-01")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Eventually(t, func() bool { return len(recv.Trace(marker)) > 0 }, 30*time.Second, 100*time.Millisecond)
	for _, s := range recv.Spans() {
		if s.Name == "POST /api/v1/namespaces/{:namespace}/configmaps" {
			assert.Equal(t, traceID, s.TraceID, "only the create with a sampled traceparent is traced")
		}
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func names(spans []tracingtest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Resource["apichain.service"]+":"+s.Name)
	}
	return out
}
