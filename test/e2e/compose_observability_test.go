package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// checkObservability: Prometheus, which compose brings up with the stack, scrapes every
// replica of every service (each gateway, the three core replicas, every other backend and
// the balancer) as system:monitoring; Jaeger holds the trace of a kubectl create with spans
// from the gateway and core (the stack runs with every request traced); and the alert on a
// paused admission webhook fires while a dead webhook keeps failing.
func (s *stack) checkObservability(t *testing.T, cs *kubernetes.Clientset) {
	prom := fmt.Sprintf("http://127.0.0.1:%d", s.prometheusPort)
	getJSON := func(u string, into any) error {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", u, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(into)
	}

	want := map[string]int{"gateway": len(s.containers("gateway")), "core": len(s.containers("core")),
		"extensions": len(s.containers("extensions")), "aggregator": len(s.containers("aggregator")), "balancer": 1}
	var up map[string]int
	var last string
	require.Eventually(t, func() bool {
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					Labels    map[string]string `json:"labels"`
					Health    string            `json:"health"`
					LastError string            `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := getJSON(prom+"/api/v1/targets", &targets); err != nil {
			last = err.Error()
			return false
		}
		up, last = map[string]int{}, ""
		for _, tg := range targets.Data.ActiveTargets {
			if tg.Health == "up" {
				up[tg.Labels["job"]]++
			} else {
				last += tg.Labels["job"] + " " + tg.Labels["instance"] + ": " + tg.Health + " " + tg.LastError + "\n"
			}
		}
		for job, n := range want {
			if up[job] != n {
				return false
			}
		}
		return true
	}, 2*time.Minute, time.Second, "Prometheus scrapes every replica: want %v, up %v; not up:\n%s", want, &up, &last)
	t.Logf("Prometheus scrapes every replica as system:monitoring: %v", up)

	// Every process's metrics have kube-apiserver's types and labels where kube has them.
	s.checkProcessMetrics(t)

	// Jaeger: the trace of a kubectl create, through the gateway into core.
	s.kubectl("create", "configmap", "traced-by-jaeger", "-n", "compose", "--from-literal=a=b")
	jaeger := fmt.Sprintf("http://127.0.0.1:%d/api/traces?", s.jaegerPort) + url.Values{
		"service": {"apiserver"}, "operation": {"POST /api/v1/namespaces/{:namespace}/configmaps"}, "limit": {"50"}, "lookback": {"1h"}}.Encode()
	var services []string
	require.Eventually(t, func() bool {
		var traces struct {
			Data []struct {
				Spans []struct {
					ProcessID string `json:"processID"`
					Tags      []struct {
						Key   string `json:"key"`
						Value any    `json:"value"`
					} `json:"tags"`
				} `json:"spans"`
				Processes map[string]struct {
					Tags []struct {
						Key   string `json:"key"`
						Value any    `json:"value"`
					} `json:"tags"`
				} `json:"processes"`
			} `json:"data"`
		}
		if err := getJSON(jaeger, &traces); err != nil {
			last = err.Error()
			return false
		}
		for _, tr := range traces.Data {
			target, kubectl := false, false
			for _, sp := range tr.Spans {
				for _, tag := range sp.Tags {
					v := fmt.Sprint(tag.Value)
					target = target || tag.Key == "http.target" && strings.HasPrefix(v, "/api/v1/namespaces/compose/configmaps")
					kubectl = kubectl || tag.Key == "user_agent.original" && strings.HasPrefix(v, "kubectl")
				}
			}
			if !target || !kubectl {
				continue
			}
			services = services[:0]
			for _, p := range tr.Processes {
				for _, tag := range p.Tags {
					if tag.Key == "apichain.service" {
						services = append(services, fmt.Sprint(tag.Value))
					}
				}
			}
			if slices.Contains(services, "gateway") && slices.Contains(services, "core") {
				return true
			}
		}
		last = fmt.Sprintf("%d traces", len(traces.Data))
		return false
	}, time.Minute, time.Second, "Jaeger has the kubectl create's trace from the gateway into core (%s)", &last)
	t.Logf("Jaeger holds the kubectl create's trace, with spans from %v", services)

	// A dead webhook with failurePolicy Ignore: after five failures in a row it is paused, and
	// the alert fires.
	dir := t.TempDir()
	file := filepath.Join(dir, "dead.yaml")
	writeFile(t, file, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: dead}\nwebhooks:\n"+
		webhookYAML("dead.example.com", "https://127.0.0.1:1/dead", "", `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			"failurePolicy: Ignore", "timeoutSeconds: 1", `namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "compose"}}`))
	s.kubectl("apply", "-f", file)
	defer s.kubectl("delete", "-f", file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = cs.CoreV1().ConfigMaps("compose").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dead-%d", i)}}, metav1.CreateOptions{})
			time.Sleep(100 * time.Millisecond)
		}
	}()
	require.Eventually(t, func() bool {
		var alerts struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := getJSON(prom+"/api/v1/alerts", &alerts); err != nil {
			last = err.Error()
			return false
		}
		last = ""
		for _, a := range alerts.Data.Alerts {
			last += a.Labels["alertname"] + ":" + a.State + " "
			if a.Labels["alertname"] == "AdmissionWebhookPaused" && a.State == "firing" && a.Labels["webhook"] == "dead.example.com" {
				return true
			}
		}
		return false
	}, 2*time.Minute, time.Second, "the paused webhook's alert fires (alerts: %s)", &last)
	cancel()
	t.Logf("AdmissionWebhookPaused fired for dead.example.com")
}

// checkProcessMetrics scrapes every instance of every service (the gateways on their API port,
// the backends on their metrics port) as the admin and compares its metric families with
// kube-apiserver's.
func (s *stack) checkProcessMetrics(t *testing.T) {
	dir := t.TempDir()
	s.run(time.Minute, "docker", "cp", s.containers("core")[0]+":/pki/ca.crt", filepath.Join(dir, "ca.crt"))
	roots, err := certs.PoolFromFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dir, "admin.kubeconfig"))
	require.NoError(t, err)
	admin, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	require.NoError(t, err)
	scrape := func(url, serverName string) string {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: serverName, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12}}}
		resp, err := hc.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
		return string(body)
	}
	common := []string{"go_goroutines", "process_cpu_seconds_total"}
	for svc, want := range map[string][]string{
		"gateway": append([]string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_flowcontrol_dispatched_requests_total"}, common...),
		"core": append([]string{"etcd_requests_total", "etcd_request_duration_seconds", "apiserver_resource_objects",
			"watch_cache_capacity", "apiserver_watch_cache_initializations_total", "apiserver_storage_list_total"}, common...),
		"extensions": append([]string{"etcd_requests_total", "etcd_request_duration_seconds"}, common...),
		"aggregator": append([]string{"etcd_requests_total", "aggregator_unavailable_apiservice"}, common...),
	} {
		port, name := "9091", "apichain-backend"
		if svc == "gateway" {
			port, name = "6443", "gateway"
		}
		for _, id := range s.containers(svc) {
			ip := strings.TrimSpace(s.run(time.Minute, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", id))
			checkFamiliesMatchKube(t, svc+" "+ip, scrape("https://"+ip+":"+port+"/metrics", name), want)
		}
	}
}
