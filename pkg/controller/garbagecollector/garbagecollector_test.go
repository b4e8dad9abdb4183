package garbagecollector

import (
	"context"
	"fmt"
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

// Deletion propagation through ownerReferences, as kube's garbage collector does it:
// Background deletes the dependents after the owner, Foreground before it, Orphan keeps
// them without the reference.
func TestRun(t *testing.T) {
	// A resync longer than the test: passes run because of deletions.
	controllertest.Run(t, func(ctx context.Context) { Run(ctx, env.Client, env.Log, time.Hour) })
	ctx := context.Background()

	ns := env.Namespace(t)
	create := func(name string, owners ...metav1.Object) metav1.Object {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, o := range owners {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.GetName(), UID: o.GetUID()})
		}
		return env.Create(t, env.ConfigMaps, ns, cm)
	}
	family := func(owner string) {
		o := create(owner)
		for i := range 2 {
			create(fmt.Sprintf("%s-child-%d", owner, i), o)
		}
	}
	exists := func(name string) bool { return env.Get(t, env.ConfigMaps, ns, name) != nil }
	remove := func(name string, policy metav1.DeletionPropagation) {
		_, err := env.Client.Delete(ctx, env.ConfigMaps, ns, name, &metav1.DeleteOptions{PropagationPolicy: &policy})
		require.NoError(t, err)
	}

	t.Run("background", func(t *testing.T) {
		family("bg")
		// One owner of two gone is not all of them: this dependent stays.
		create("bg-shared", env.Get(t, env.ConfigMaps, ns, "bg"), create("bg-other-owner"))
		remove("bg", metav1.DeletePropagationBackground)
		assert.False(t, exists("bg"), "the owner goes at once")
		require.Eventually(t, func() bool { return !exists("bg-child-0") && !exists("bg-child-1") }, controllertest.WaitFor, 10*time.Millisecond)
		shared := env.Get(t, env.ConfigMaps, ns, "bg-shared")
		require.NotNil(t, shared, "an owner is alive")
		assert.Nil(t, shared.GetDeletionTimestamp())
	})

	t.Run("foreground", func(t *testing.T) {
		family("fg")
		remove("fg", metav1.DeletePropagationForeground)
		owner := env.Get(t, env.ConfigMaps, ns, "fg")
		if owner != nil { // the collector may have finished already
			assert.Contains(t, owner.GetFinalizers(), metav1.FinalizerDeleteDependents)
		}
		require.Eventually(t, func() bool { return !exists("fg") }, controllertest.WaitFor, 10*time.Millisecond)
		assert.False(t, exists("fg-child-0"), "dependents go before the owner")
		assert.False(t, exists("fg-child-1"))
	})

	t.Run("orphan", func(t *testing.T) {
		family("or")
		remove("or", metav1.DeletePropagationOrphan)
		require.Eventually(t, func() bool { return !exists("or") }, controllertest.WaitFor, 10*time.Millisecond)
		for i := range 2 {
			child := env.Get(t, env.ConfigMaps, ns, fmt.Sprintf("or-child-%d", i))
			require.NotNil(t, child, "orphans survive")
			assert.Empty(t, child.GetOwnerReferences())
		}
	})
}
