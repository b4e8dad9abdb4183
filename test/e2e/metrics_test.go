package e2e

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gateway's /metrics shows the split: every instance's readiness and where the gateway
// learns it (NATS), its NATS connection, and grpc-go's standard client metrics for its calls to
// the backends, under apichain_; and kube's etcd request metrics with kube's labels.
func TestGatewayMetricsOfTheSplit(t *testing.T) {
	c, _ := startAllInOne(t)
	// A watch from resourceVersion 0 gets an ADDED event per namespace, then times out.
	code, watched, _ := c.get("/api/v1/namespaces?watch=true&resourceVersion=0&timeoutSeconds=1")
	require.Equal(t, 200, code, watched)
	for range 3 {
		code, _, _ := c.get("/api/v1/namespaces/default")
		require.Equal(t, 200, code)
	}
	body := c.eventuallyBody("/metrics", 200, 10*time.Second,
		`apichain_lifecycle_source{source="nats"} 1`,
		`apichain_lifecycle_source{source="grpc-health"} 0`,
		"apichain_nats_connected 1",
		"# TYPE apichain_grpc_client_handling_seconds histogram",
		// kube's etcd client metrics, from the backends in this process.
		`etcd_request_duration_seconds_count{group="",operation="get",resource="namespaces"}`,
		`etcd_requests_total{group="",operation="list",resource="configmaps"}`,
		// and the objects the watch caches hold.
		`apiserver_resource_objects{group="",resource="namespaces"} 4`,
		`apiserver_resource_objects{group="rbac.authorization.k8s.io",resource="clusterroles"}`,
		// and the watch events sent (kube's watch metrics).
		`apiserver_watch_events_total{group="",resource="namespaces",version="v1"} `,
		`apiserver_watch_events_sizes_count{group="",resource="namespaces",version="v1"} `,
		// and every APIService's availability (kube-aggregator's gauge).
		`aggregator_unavailable_apiservice{name="v1."} 0`,
		`aggregator_unavailable_apiservice{name="v1.apps"} 0`)
	for _, svc := range []string{"aggregator", "core", "extensions"} {
		assert.Regexp(t, `apichain_lifecycle_instance_ready\{instance="`+svc+`-[^"]+",service="`+svc+`"\} 1`, body)
	}
	m := regexp.MustCompile(`apichain_grpc_client_handled_total\{grpc_code="OK",grpc_method="Get",grpc_service="apichain.resource.v1.ResourceService",grpc_type="unary"\} (\d+)`).FindStringSubmatch(body)
	require.NotNil(t, m, "the gateway's gets to core are counted:\n%s", body)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 3)
}

// The all-in-one's metrics (its one /metrics holds every service's) have kube-apiserver's types
// and labels wherever kube has the metric, after creates, gets, lists and watches.
func TestMetricFamiliesMatchKube(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	k.run("create", "configmap", "families", "--from-literal=a=b")
	k.run("get", "configmaps", "families")
	k.run("get", "configmaps")
	code, watched, _ := c.get("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1")
	require.Equal(t, 200, code, watched)
	body := c.eventuallyBody("/metrics", 200, 10*time.Second, "apiserver_watch_events_total", "apiserver_admission_step_admission_duration_seconds")
	checkFamiliesMatchKube(t, "all-in-one", body, []string{
		"apiserver_request_total", "apiserver_request_duration_seconds",
		"etcd_request_duration_seconds", "etcd_requests_total", "apiserver_resource_objects",
		"apiserver_watch_events_total", "apiserver_watch_events_sizes",
		"apiserver_admission_step_admission_duration_seconds", "apiserver_admission_controller_admission_duration_seconds",
		"apiserver_flowcontrol_dispatched_requests_total", "aggregator_unavailable_apiservice",
		"go_goroutines", "process_cpu_seconds_total",
		// the lists: kubectl's consistent list, served by the watch cache, and the cache's own
		// initial list from etcd.
		"apiserver_storage_list_total", "apiserver_storage_list_fetched_objects_total",
		"apiserver_storage_list_evaluated_objects_total", "apiserver_storage_list_returned_objects_total",
		"apiserver_watch_cache_consistent_read_total",
		// the watch caches.
		"watch_cache_capacity", "apiserver_watch_cache_initializations_total",
		"apiserver_watch_cache_initialization_duration_seconds", "apiserver_watch_cache_resource_version",
		"apiserver_watch_cache_events_received_total", "apiserver_watch_cache_events_dispatched_total",
	})
	// kubectl's list was a consistent read served by the cache, counted with kube's labels.
	assert.Regexp(t, `apiserver_watch_cache_consistent_read_total\{fallback="false",group="",resource="configmaps",success="true"\} [1-9]`, body)
	assert.Regexp(t, `apiserver_storage_list_returned_objects_total\{group="",resource="configmaps",storage="watchcache"\} [1-9]`, body)
	assert.Regexp(t, `apiserver_admission_controller_admission_duration_seconds_count\{name="NamespaceLifecycle",operation="CREATE",rejected="false",type="admit"\} [1-9]`, body)
	assert.Regexp(t, `watch_cache_capacity\{group="",resource="configmaps"\} 1024`, body)
}
