package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	grpcclient "github.com/apichain/apichain/pkg/client"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

func grpcConfigMaps(c *grpcclient.Client, ns string) *grpcclient.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return grpcclient.For[corev1.ConfigMap, corev1.ConfigMapList](c, configMapsGVR).Namespace(ns)
}

// nextEvent is the next event of w within 20 s.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "the watch ended")
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20 s")
		return watch.Event{}
	}
}

// The Go client (pkg/client) through the gateway's port, as a user holds it: dialled from a
// kubeconfig, typed and unstructured objects, pages, watches, server-side apply, kube's errors,
// RBAC decided per resource from the call's message.
func TestGRPCClient(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("bob-token,bob,1002\n"), 0o600))
	c, _ := startAllInOne(t, "--token-auth-file", tokens)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := grpcclient.FromKubeconfig(filepath.Join(c.dataDir(), "admin.kubeconfig"))
	require.NoError(t, err)
	defer admin.Close()
	cms := grpcConfigMaps(admin, "default")

	t.Run("CRUD", func(t *testing.T) {
		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crud"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, created.UID)
		assert.Equal(t, "apichain-client", created.ManagedFields[0].Manager, "the user agent's name is the field manager")
		got, err := cms.Get(ctx, "crud", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, created.UID, got.UID)
		got.Data["b"] = "2"
		updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": "1", "b": "2"}, updated.Data)
		// A stale update conflicts, in kube's words.
		_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		patched, err := cms.Patch(ctx, "crud", types.MergePatchType, []byte(`{"data":{"a":null,"c":"3"}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"b": "2", "c": "3"}, patched.Data)
		patched, err = cms.Patch(ctx, "crud", types.JSONPatchType, []byte(`[{"op":"replace","path":"/data/b","value":"two"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
		assert.Equal(t, "two", patched.Data["b"])
		// A precondition on the wrong UID keeps the object.
		wrong := types.UID("not-its-uid")
		err = cms.Delete(ctx, "crud", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		require.NoError(t, cms.Delete(ctx, "crud", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}))
		_, err = cms.Get(ctx, "crud", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
		assert.Equal(t, `configmaps "crud" not found`, err.Error())
		// A namespace through the unstructured client.
		ns, err := grpcclient.For[unstructured.Unstructured, unstructured.UnstructuredList](admin, corev1.SchemeGroupVersion.WithResource("namespaces")).
			Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "Namespace", ns.GetKind())
	})

	t.Run("pages", func(t *testing.T) {
		for i := range 7 {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("page-%d", i), Labels: map[string]string{"paged": "yes"}}},
				metav1.CreateOptions{})
			require.NoError(t, err)
		}
		var names []string
		opts := metav1.ListOptions{LabelSelector: "paged=yes", Limit: 3}
		pages := 0
		for {
			list, err := cms.List(ctx, opts)
			require.NoError(t, err)
			pages++
			assert.LessOrEqual(t, len(list.Items), 3)
			for _, cm := range list.Items {
				names = append(names, cm.Name)
			}
			if list.Continue == "" {
				assert.Nil(t, list.RemainingItemCount)
				break
			}
			opts.Continue = list.Continue
		}
		assert.Equal(t, 3, pages)
		assert.Equal(t, []string{"page-0", "page-1", "page-2", "page-3", "page-4", "page-5", "page-6"}, names)
		// A bad continue token is kube's 400 (410 for an expired one).
		_, err := cms.List(ctx, metav1.ListOptions{Limit: 3, Continue: "not-a-token"})
		assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	})

	t.Run("watch with initial events, an event and a bookmark", func(t *testing.T) {
		yes := true
		w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "paged=yes", SendInitialEvents: &yes, AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		require.NoError(t, err)
		defer w.Stop()
		var initial []string
		for {
			ev := nextEvent(t, w)
			if ev.Type == watch.Bookmark {
				cm := ev.Object.(*corev1.ConfigMap)
				assert.Equal(t, "true", cm.Annotations[metav1.InitialEventsAnnotationKey])
				assert.NotEmpty(t, cm.ResourceVersion)
				break
			}
			require.Equal(t, watch.Added, ev.Type)
			initial = append(initial, ev.Object.(*corev1.ConfigMap).Name)
		}
		slices.Sort(initial)
		assert.Equal(t, []string{"page-0", "page-1", "page-2", "page-3", "page-4", "page-5", "page-6"}, initial)
		require.NoError(t, cms.Delete(ctx, "page-0", metav1.DeleteOptions{}))
		ev := nextEvent(t, w)
		assert.Equal(t, watch.Deleted, ev.Type)
		assert.Equal(t, "page-0", ev.Object.(*corev1.ConfigMap).Name)
	})

	t.Run("resuming watch", func(t *testing.T) {
		// Count the watch streams the client opens: each ends after a second on the server.
		var opened atomic.Int32
		counting, err := grpcclient.FromKubeconfig(filepath.Join(c.dataDir(), "admin.kubeconfig"),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				opened.Add(1)
				return streamer(ctx, desc, cc, method, opts...)
			}))
		require.NoError(t, err)
		defer counting.Close()
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "resumed=yes"})
		require.NoError(t, err)
		one := int64(1)
		w, err := grpcConfigMaps(counting, "default").ResumingWatch(ctx, metav1.ListOptions{LabelSelector: "resumed=yes",
			ResourceVersion: list.ResourceVersion, TimeoutSeconds: &one})
		require.NoError(t, err)
		defer w.Stop()
		for i := range 3 {
			// Each create lands after the stream that saw the last one has ended and another
			// has opened from its resourceVersion.
			before := opened.Load()
			require.Eventually(t, func() bool { return opened.Load() > before }, 20*time.Second, 10*time.Millisecond, "the watch resumes")
			name := fmt.Sprintf("resumed-%d", i)
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"resumed": "yes"}}},
				metav1.CreateOptions{})
			require.NoError(t, err)
			for {
				ev := nextEvent(t, w)
				if ev.Type == watch.Bookmark {
					continue
				}
				require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
				assert.Equal(t, name, ev.Object.(*corev1.ConfigMap).Name, "each event once, in order")
				break
			}
		}
		_, err = grpcConfigMaps(counting, "default").ResumingWatch(ctx, metav1.ListOptions{})
		assert.Error(t, err, "a resuming watch starts from a list's resourceVersion")
	})

	t.Run("server-side apply", func(t *testing.T) {
		apply := func(manager, value string, force bool) (*corev1.ConfigMap, error) {
			return cms.Apply(ctx, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: "applied"}, Data: map[string]string{"key": value}}, manager, force)
		}
		cm, err := apply("first", "1", false)
		require.NoError(t, err)
		assert.Equal(t, "1", cm.Data["key"])
		assert.Equal(t, "first", cm.ManagedFields[0].Manager)
		assert.Equal(t, metav1.ManagedFieldsOperationApply, cm.ManagedFields[0].Operation)
		_, err = apply("second", "2", false)
		require.True(t, apierrors.IsConflict(err), "%v", err)
		assert.Contains(t, err.Error(), `conflict with "first": .data.key`)
		cm, err = apply("second", "2", true)
		require.NoError(t, err)
		assert.Equal(t, "2", cm.Data["key"])
		require.Len(t, cm.ManagedFields, 1, "forced: the field moved to its new manager")
		assert.Equal(t, "second", cm.ManagedFields[0].Manager)
	})

	t.Run("a bad token is UNAUTHENTICATED", func(t *testing.T) {
		bad, err := grpcclient.New(&rest.Config{Host: c.base, BearerToken: "not-a-token", TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
		require.NoError(t, err)
		defer bad.Close()
		_, err = grpcConfigMaps(bad, "default").Get(ctx, "applied", metav1.GetOptions{})
		assert.True(t, apierrors.IsUnauthorized(err), "%v", err)
	})

	t.Run("RBAC per resource: denied, then allowed by a binding", func(t *testing.T) {
		bob, err := grpcclient.New(&rest.Config{Host: c.base, BearerToken: "bob-token", TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
		require.NoError(t, err)
		defer bob.Close()
		bobs := grpcConfigMaps(bob, "default")
		_, err = bobs.Get(ctx, "applied", metav1.GetOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, `configmaps "applied" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default"`, err.Error())
		// An admin acting as bob is refused the same way.
		cfg := rest.CopyConfig(c.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"system:authenticated"}}
		asBob, err := grpcclient.New(cfg)
		require.NoError(t, err)
		defer asBob.Close()
		_, err = grpcConfigMaps(asBob, "default").List(ctx, metav1.ListOptions{})
		assert.Equal(t, `configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"`, err.Error())

		// The role and its binding are made over gRPC too.
		roles := grpcclient.For[rbacv1.Role, rbacv1.RoleList](admin, rbacv1.SchemeGroupVersion.WithResource("roles")).Namespace("default")
		_, err = roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		bindings := grpcclient.For[rbacv1.RoleBinding, rbacv1.RoleBindingList](admin, rbacv1.SchemeGroupVersion.WithResource("rolebindings")).Namespace("default")
		_, err = bindings.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-reads"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := bobs.Get(ctx, "applied", metav1.GetOptions{})
			return err == nil
		}, 10*time.Second, 20*time.Millisecond, "the binding takes effect")
		list, err := bobs.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, list.Items)
		w, err := bobs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		require.NoError(t, err)
		w.Stop()
		// Only what the role grants: not a delete, not another namespace.
		err = bobs.Delete(ctx, "applied", metav1.DeleteOptions{})
		assert.Equal(t, `configmaps "applied" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "default"`, err.Error())
		_, err = grpcConfigMaps(bob, "kube-system").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	})
}

// The README's example program (pkg/client/example) runs as it says against the all-in-one.
func TestGRPCClientExample(t *testing.T) {
	c, _ := startAllInOne(t)
	out, err := exec.Command(binary("example"), "--kubeconfig", filepath.Join(c.dataDir(), "admin.kubeconfig")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 6, "%s", out)
	assert.Equal(t, "gateway SERVING", lines[0])
	name := strings.Fields(lines[1])[1]
	assert.Regexp(t, `^created greeting-\w+ \(uid [0-9a-f-]{36}\)$`, lines[1])
	assert.Equal(t, []string{"ADDED " + name + " hello=world", "MODIFIED " + name + " hello=there", "MODIFIED " + name + " hello=gRPC",
		"DELETED " + name + " hello=gRPC"}, lines[2:])
	// A second run starts clean.
	out, err = exec.Command(binary("example"), "--kubeconfig", filepath.Join(c.dataDir(), "admin.kubeconfig")).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
