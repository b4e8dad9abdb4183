package e2e

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// diagnoseFinding is one finding of `apichain diagnose -o json`.
type diagnoseFinding struct {
	Check, Verdict, Subject, Message, Cause, Fix string
}

// diagnose runs `apichain diagnose` with kubeconfig and returns its output and exit code.
func diagnose(t testing.TB, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "apichain"), append([]string{"diagnose", "--kubeconfig", kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		require.Empty(t, stderr.String(), "diagnose ran: %s", out)
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, "%s%s", out, stderr.String())
	return string(out), 0
}

func diagnoseJSON(t testing.TB, kubeconfig string, args ...string) ([]diagnoseFinding, int) {
	t.Helper()
	out, code := diagnose(t, kubeconfig, append([]string{"-o", "json"}, args...)...)
	var report struct{ Findings []diagnoseFinding }
	require.NoError(t, json.Unmarshal([]byte(out), &report), out)
	return report.Findings, code
}

// On a healthy all-in-one every check of the checklist passes: every service's instance is
// ready, etcd answers each backend, and diagnose exits 0.
func TestDiagnoseHealthy(t *testing.T) {
	c, _ := startAllInOne(t)
	kubeconfig := filepath.Join(c.data, "admin.kubeconfig")
	// A loaded test machine can take seconds where a server takes milliseconds: the thresholds
	// for what is slow are not under test here.
	lenient := []string{"--slow-hook", "1m", "--slow-etcd", "10s"}
	out, code := diagnose(t, kubeconfig, lenient...)
	t.Log(out)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "no problem found")

	findings, code := diagnoseJSON(t, kubeconfig, lenient...)
	assert.Equal(t, 0, code)
	checks := map[string]bool{}
	etcd := map[string]bool{}
	for _, f := range findings {
		assert.Equal(t, "ok", f.Verdict, "%+v", f)
		checks[f.Check] = true
		if f.Check == "etcd" {
			etcd[strings.SplitN(f.Subject, "/", 2)[0]] = true
			assert.Contains(t, f.Message, " in ", "the round trip is measured: %s", f.Message)
		}
	}
	for _, check := range []string{"readiness", "lifecycle", "instances", "post-start hooks", "cache sync", "etcd",
		"priority and fairness", "serving certificate"} {
		assert.True(t, checks[check], "diagnose ran %q", check)
	}
	assert.Equal(t, map[string]bool{"aggregator": true, "core": true, "extensions": true}, etcd, "every backend's etcd round trip")
}

// The checklist's three classic causes of a slow or failing API server: a validating webhook
// pointing nowhere with failurePolicy Fail and a 30 s timeout, a slow post-start hook, and an
// APIService whose server is dead. diagnose names each, with its fix, and exits non-zero.
func TestDiagnoseNamesProblems(t *testing.T) {
	c, _ := startAllInOne(t, "--testing-slow-post-start-hook", "6s")
	kubeconfig := filepath.Join(c.data, "admin.kubeconfig")
	breakThreeWays(t, kubeconfig)
	requireDiagnosisOfThree(t, kubeconfig)
}

// breakThreeWays adds a validating webhook pointing nowhere with failurePolicy Fail and a
// 30 s timeout, and an APIService whose server is dead, and waits until the webhook fails a
// write. It returns their removal.
func breakThreeWays(t *testing.T, kubeconfig string) (undo func()) {
	k := kc{t: t, kubeconfig: kubeconfig}
	file := filepath.Join(t.TempDir(), "broken.yaml")
	writeFile(t, file, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: stalls}\nwebhooks:\n"+
		webhookYAML("nowhere.example.com", deadURL(t)+"/validate", `""`, `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			"failurePolicy: Fail", "timeoutSeconds: 30", "objectSelector: {matchLabels: {diagnose: \"yes\"}}")+
		"---\n"+loopbackService("default", "gone", deadPort(t), false)+`---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.gone.example.com}
spec: {group: gone.example.com, version: v1, service: {namespace: default, name: gone}, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}
`)
	k.run("apply", "-f", file)
	// A write the webhook matches fails at once (nothing listens there), so it is also failing.
	cm := filepath.Join(t.TempDir(), "cm.yaml")
	writeFile(t, cm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: matched, namespace: default, labels: {diagnose: \"yes\"}}\n")
	require.Eventually(t, func() bool {
		out, err := kubectl(t, kubeconfig, "apply", "-f", cm)
		return err != nil && strings.Contains(out, "nowhere.example.com")
	}, 20*time.Second, 200*time.Millisecond, "the webhook applies")
	return func() { k.run("delete", "-f", file) }
}

// requireDiagnosisOfThree runs diagnose until it names breakThreeWays's webhook and APIService
// and a slowed post-start hook of core, each with its fix, and exits non-zero.
func requireDiagnosisOfThree(t *testing.T, kubeconfig string, args ...string) []diagnoseFinding {
	var findings []diagnoseFinding
	find := func(check, subject string) *diagnoseFinding {
		for i := range findings {
			if findings[i].Check == check && strings.Contains(findings[i].Subject, subject) {
				return &findings[i]
			}
		}
		return nil
	}
	// The aggregator's availability check and the backend's published failure take a moment.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		findings, _ = diagnoseJSON(t, kubeconfig, args...)
		api, webhook := find("APIServices", "v1.gone.example.com"), find("admission webhooks", "nowhere.example.com")
		if api != nil && api.Verdict == "failed" && webhook != nil && webhook.Verdict == "failed" {
			break
		}
		require.True(t, time.Now().Before(deadline), "diagnose finds the dead APIService and the failing webhook: %+v", findings)
	}

	hook := find("post-start hooks", "testing-slow-hook")
	require.NotNil(t, hook, "the slow hook: %+v", findings)
	assert.Equal(t, "warning", hook.Verdict)
	assert.Contains(t, hook.Message, "core/")
	assert.NotEmpty(t, hook.Fix)

	webhook := find("admission webhooks", "nowhere.example.com")
	require.NotNil(t, webhook, "the webhook: %+v", findings)
	assert.Equal(t, "failed", webhook.Verdict)
	assert.Contains(t, webhook.Message, "failing")
	assert.Contains(t, webhook.Cause, "failurePolicy Fail, timeoutSeconds 30")
	assert.Contains(t, webhook.Fix, "timeoutSeconds")

	api := find("APIServices", "v1.gone.example.com")
	assert.Contains(t, api.Message, "default/gone")
	assert.Contains(t, api.Fix, "endpoints")

	out, code := diagnose(t, kubeconfig, args...)
	t.Log(out)
	assert.Equal(t, 1, code, "diagnose exits non-zero")
	for _, want := range []string{"nowhere.example.com", "testing-slow-hook", "v1.gone.example.com", "fix:"} {
		assert.Contains(t, out, want)
	}
	return findings
}

// deadPort is a loopback port nothing listens on.
func deadPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// checkDiagnose is the checklist on the compose stack: core scaled to 2 with a post-start hook
// slowed on purpose, one replica stopped, a webhook pointing nowhere and a dead APIService.
// diagnose, run from outside through the balancer, names all three and the replica left.
func (s *stack) checkDiagnose(t *testing.T, hc *http.Client, cfg *rest.Config) {
	env := s.env
	s.env = append(slices.Clone(env), "APICHAIN_TESTING_SLOW_HOOK=6s")
	s.compose("up", "-d", "--no-deps", "--scale", "core=2", "core") // recreated with the slow hook
	s.env = env
	s.waitReadyInstances(hc, cfg, "core", 2)
	cores := s.containers("core")
	s.run(2*time.Minute, "docker", "stop", cores[0])
	s.waitReadyInstances(hc, cfg, "core", 1)

	kubeconfig := s.kubeconfigFor(t, cfg.Host)
	undo := breakThreeWays(t, kubeconfig)
	defer undo()
	findings := requireDiagnosisOfThree(t, kubeconfig, "--slow-etcd", "10s")
	var coreInstances []string
	for _, f := range findings {
		if f.Check == "instances" && strings.HasPrefix(f.Subject, "core/") {
			coreInstances = append(coreInstances, f.Verdict+" "+f.Message)
		}
	}
	require.Len(t, coreInstances, 1, "the core replica left, and only it: %v", coreInstances)
	assert.Contains(t, coreInstances[0], "ok ")
	assert.Contains(t, coreInstances[0], cores[1][:12], "diagnose names the running replica by its host name")
}

// kubeconfigFor writes the stack's admin kubeconfig with host as its server.
func (s *stack) kubeconfigFor(t *testing.T, host string) string {
	kc, err := clientcmd.LoadFromFile(filepath.Join(s.dir, "admin.kubeconfig"))
	require.NoError(t, err)
	for _, c := range kc.Clusters {
		c.Server = host
	}
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}
