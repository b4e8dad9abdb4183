package podgc

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/controller/internal/controllertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var env *controllertest.Env

func TestMain(m *testing.M) { os.Exit(controllertest.Main(m, &env)) }

// Pods on a node that stays missing through the quarantine are failed and deleted at once,
// whatever grace they had; pods on a node that exists, or that shows up within the
// quarantine, stay.
func TestOrphanedPods(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	pod := func(name, node string, finalizers ...string) {
		env.Create(t, env.Pods, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}})
	}
	env.Create(t, env.Nodes, "", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gc-alive"}})
	pod("on-alive", "gc-alive")
	pod("on-ghost", "gc-ghost")
	pod("held-on-ghost", "gc-ghost", "example.com/hold")
	pod("terminating-on-ghost", "gc-ghost")
	pod("on-late", "gc-late")
	deleted, err := env.Client.Delete(ctx, env.Pods, ns, "terminating-on-ghost", nil)
	require.NoError(t, err)
	require.False(t, deleted, "it has 30 s of grace")

	now := time.Now()
	gc := &collector{c: env.Client, pods: env.Pods, nodes: env.Nodes, quarantine: Quarantine, missing: map[string]time.Time{},
		now: func() time.Time { return now }}
	exists := func(name string) bool { return env.Get(t, env.Pods, ns, name) != nil }
	pass := func(after time.Duration) {
		t.Helper()
		now = now.Add(after)
		require.NoError(t, gc.pass(ctx))
	}

	pass(0)
	pass(Quarantine - time.Second)
	for _, name := range []string{"on-alive", "on-ghost", "held-on-ghost", "terminating-on-ghost", "on-late"} {
		assert.True(t, exists(name), "%s: within the quarantine nothing goes", name)
	}
	env.Create(t, env.Nodes, "", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gc-late"}})
	pass(2 * time.Second)
	assert.False(t, exists("on-ghost"))
	assert.False(t, exists("terminating-on-ghost"), "the grace it had does not matter")
	assert.True(t, exists("on-alive"))
	assert.True(t, exists("on-late"), "its node came")

	held := env.Get(t, env.Pods, ns, "held-on-ghost")
	require.NotNil(t, held, "its finalizer holds it")
	p := held.(*corev1.Pod)
	assert.NotNil(t, p.DeletionTimestamp)
	assert.Equal(t, corev1.PodFailed, p.Status.Phase)
	require.Len(t, p.Status.Conditions, 1)
	c := p.Status.Conditions[0]
	assert.Equal(t, []string{string(corev1.DisruptionTarget), "True", "DeletionByPodGC", "PodGC: node no longer exists"},
		[]string{string(c.Type), string(c.Status), c.Reason, c.Message})
}
