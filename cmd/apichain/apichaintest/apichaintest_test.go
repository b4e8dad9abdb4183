package apichaintest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Two servers at once in one process: each is a cluster of its own, usable from client-go
// and kubectl, and Stop removes its data.
func TestTwoServers(t *testing.T) {
	ctx := context.Background()
	servers := make([]*Server, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = Start(ctx, Options{}) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "server %d", i)
	}
	defer func() {
		for _, s := range servers {
			_ = s.Stop()
		}
	}()
	require.NotEqual(t, servers[0].URL, servers[1].URL)

	for i, s := range servers {
		cs, err := kubernetes.NewForConfig(s.Config)
		require.NoError(t, err)
		name := []string{"first", "second"}[i]
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"server": name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i, s := range servers {
		out, err := exec.Command("kubectl", "--kubeconfig", s.KubeconfigPath, "get", "configmaps", "-n", "default",
			"-o", "jsonpath={.items[*].metadata.name}").CombinedOutput()
		require.NoError(t, err, string(out))
		names := strings.Fields(string(out))
		assert.Contains(t, names, []string{"first", "second"}[i])
		assert.NotContains(t, names, []string{"second", "first"}[i], "each server is a cluster of its own")
	}

	dir := servers[0].DataDir
	require.NoError(t, servers[0].Stop())
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "Stop removes the temporary data directory")
	cs, err := kubernetes.NewForConfig(servers[1].Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "second", metav1.GetOptions{})
	assert.NoError(t, err, "the other server still serves")
}

// A bad flag is Start's error, not a hang.
func TestStartError(t *testing.T) {
	_, err := Start(context.Background(), Options{Args: []string{"--no-such-flag"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-flag")
}

// BenchmarkStart is a test server's start to /readyz, in process, with a fresh data
// directory, and its stop.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		s, err := Start(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// The envtest profile is a bare kube-apiserver as envtest runs it: pods are admitted without a
// service account and may be privileged, and none of kube-controller-manager's controllers run.
func TestEnvtestProfile(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Options{Envtest: true})
	require.NoError(t, err)
	defer func() { _ = s.Stop() }()
	cs, err := kubernetes.NewForConfig(s.Config)
	require.NoError(t, err)

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	privileged := true
	pod, err := cs.CoreV1().Pods("bare").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &privileged}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err, "no ServiceAccount admission, privileged allowed")
	assert.Empty(t, pod.Spec.ServiceAccountName)
	assert.Empty(t, pod.Spec.Volumes, "no token volume")

	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	require.NoError(t, err)
	checks := string(body)
	assert.Contains(t, checks, "poststarthook/bootstrap-controller ok", "kube-apiserver's own hooks run")
	for _, hook := range []string{"start-serviceaccount-controller", "start-garbage-collector", "start-namespace-lifecycle-controller",
		"start-resourcequota-controller", "start-clusterrole-aggregation-controller"} {
		assert.NotContains(t, checks, hook, "kube-controller-manager's controllers do not run")
	}
}
