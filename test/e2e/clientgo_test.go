package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func clientset(t testing.TB, c *client) *kubernetes.Clientset {
	t.Helper()
	cfg := *c.config
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(&cfg)
	require.NoError(t, err)
	return cs
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// Typed clientset CRUD with kube's metadata and concurrency rules.
func TestClientGoCRUD(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx := context.Background()
	createNamespace(t, cs, "crud")
	cms := cs.CoreV1().ConfigMaps("crud")

	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-", Labels: map[string]string{"app": "x"}},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^gen-[a-z0-9]{5}$`, created.Name)
	assert.NotEmpty(t, created.UID)
	assert.NotEmpty(t, created.ResourceVersion)
	assert.False(t, created.CreationTimestamp.IsZero())

	got, err := cms.Get(ctx, created.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion)

	got.Data["k"] = "v2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, got.ResourceVersion, updated.ResourceVersion)

	// A stale resourceVersion is a conflict.
	got.Data["k"] = "stale"
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "%v", err)

	patched, err := cms.Patch(ctx, created.Name, types.MergePatchType, []byte(`{"data":{"p":"1"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v2", "p": "1"}, patched.Data)

	// dryRun writes nothing.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{"All"}})
	require.NoError(t, err)
	_, err = cms.Get(ctx, "dry", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	// Finalizers hold deletion; removing the last one completes it.
	fin, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cms.Delete(ctx, fin.Name, metav1.DeleteOptions{}))
	held, err := cms.Get(ctx, "held", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, held.DeletionTimestamp)
	_, err = cms.Patch(ctx, "held", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = cms.Get(ctx, "held", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	// Delete preconditions.
	wrongUID := types.UID("not-the-uid")
	err = cms.Delete(ctx, created.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	require.NoError(t, cms.Delete(ctx, created.Name, metav1.DeleteOptions{}))
	_, err = cms.Get(ctx, created.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

}

// Pagination over 1,000 objects gives a consistent snapshot across pages.
func TestClientGoPagination(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx := context.Background()
	createNamespace(t, cs, "pages")
	cms := cs.CoreV1().ConfigMaps("pages")
	// The namespace's kube-root-ca.crt is one of the objects listed (after the others by name).
	require.Eventually(t, func() bool {
		_, err := cms.Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	var names []string
	opts := metav1.ListOptions{Limit: 100}
	pages := 0
	for {
		list, err := cms.List(ctx, opts)
		require.NoError(t, err)
		pages++
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		if pages == 1 {
			require.NotNil(t, list.RemainingItemCount)
			assert.EqualValues(t, 901, *list.RemainingItemCount)
			// Written after the first page: not part of this list's snapshot.
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-9999-late"}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	assert.Equal(t, 11, pages)
	require.Len(t, names, 1001)
	for i, n := range names[:1000] {
		assert.Equal(t, fmt.Sprintf("cm-%04d", i), n)
	}
	assert.Equal(t, "kube-root-ca.crt", names[1000])
	all, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, all.Items, 1002)

	_, err = cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: "not-a-token"})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
}

// An informer sees adds, updates and deletes.
func TestClientGoInformer(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createNamespace(t, cs, "inf")
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("inf"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var added, updated, deleted atomic.Int32
	ours := func(obj any) bool { // not the namespace's kube-root-ca.crt
		cm, ok := obj.(*corev1.ConfigMap)
		return ok && strings.HasPrefix(cm.Name, "i")
	}
	_, err := inf.AddEventHandler(cache.FilteringResourceEventHandler{FilterFunc: ours, Handler: cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { added.Add(1) },
		UpdateFunc: func(any, any) { updated.Add(1) },
		DeleteFunc: func(any) { deleted.Add(1) },
	}})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

	cms := cs.CoreV1().ConfigMaps("inf")
	for i := 0; i < 5; i++ {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("i%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = cms.Patch(ctx, "i0", types.MergePatchType, []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, cms.Delete(ctx, "i1", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return added.Load() == 5 && updated.Load() >= 1 && deleted.Load() == 1 },
		15*time.Second, 20*time.Millisecond)
	var left int
	for _, o := range inf.GetStore().List() {
		if ours(o) {
			left++
		}
	}
	assert.Equal(t, 4, left)
}

// Leader election with Leases between two candidates: one leads; when it steps down the
// other takes over.
func TestClientGoLeaderElection(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	var leader atomic.Value
	leader.Store("")
	run := func(ctx context.Context, id string, stopped chan<- struct{}) {
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: "elect", Namespace: "default"}, Client: cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, ReleaseOnCancel: true, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { leader.Store(id) },
				OnStoppedLeading: func() {},
			},
		})
		close(stopped)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	stoppedA, stoppedB := make(chan struct{}), make(chan struct{})
	go run(ctxA, "a", stoppedA)
	require.Eventually(t, func() bool { return leader.Load() == "a" }, 15*time.Second, 20*time.Millisecond)
	go run(ctxB, "b", stoppedB)

	lease, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "elect", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", *lease.Spec.HolderIdentity)

	cancelA()
	<-stoppedA
	require.Eventually(t, func() bool { return leader.Load() == "b" }, 15*time.Second, 20*time.Millisecond)
	var l *coordinationv1.Lease
	l, err = cs.CoordinationV1().Leases("default").Get(context.Background(), "elect", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", *l.Spec.HolderIdentity)
	cancelB()
	<-stoppedB
}

// TokenReview and SubjectAccessReview let aggregated API servers delegate to apichain.
func TestClientGoReviews(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("review-token,alice,1001,\"devs,ops\"\n"), 0o600))
	c, _ := startAllInOne(t, "--token-auth-file", tokens)
	cs := clientset(t, c)
	ctx := context.Background()

	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "review-token"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, tr.Status.Authenticated)
	assert.Equal(t, "alice", tr.Status.User.Username)
	assert.Equal(t, []string{"devs", "ops", "system:authenticated"}, tr.Status.User.Groups)

	tr, err = cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "wrong"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, tr.Status.Authenticated)

	access := func(u string, groups ...string) authorizationv1.SubjectAccessReviewStatus {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "default"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return sar.Status
	}
	assert.False(t, access("alice", "devs").Allowed, "no binding gives alice configmaps")
	st := access("root", "system:masters")
	assert.True(t, st.Allowed, "system:masters may")
	_, err = cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "devs-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return access("alice", "devs").Allowed }, 10*time.Second, 20*time.Millisecond,
		"the gateway's RBAC answers once the binding arrives")
	assert.Equal(t, `RBAC: allowed by RoleBinding "devs-view/default" of ClusterRole "view" to Group "devs"`, access("alice", "devs").Reason)

	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kubernetes-admin", ssr.Status.UserInfo.Username)
}

// Deletion propagation through ownerReferences: Background deletes dependents after the
// owner, Foreground before it, Orphan keeps them without the reference.
func TestClientGoGarbageCollection(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx := context.Background()
	createNamespace(t, cs, "gc")
	cms := cs.CoreV1().ConfigMaps("gc")
	family := func(owner string) {
		o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for i := 0; i < 2; i++ {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-child-%d", owner, i),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: o.UID}}}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	exists := func(name string) bool {
		_, err := cms.Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}

	family("bg")
	require.NoError(t, cms.Delete(ctx, "bg", policy(metav1.DeletePropagationBackground)))
	assert.False(t, exists("bg"), "the owner goes at once")
	require.Eventually(t, func() bool { return !exists("bg-child-0") && !exists("bg-child-1") }, 15*time.Second, 50*time.Millisecond)

	family("fg")
	require.NoError(t, cms.Delete(ctx, "fg", policy(metav1.DeletePropagationForeground)))
	require.Eventually(t, func() bool { return !exists("fg") }, 15*time.Second, 50*time.Millisecond)
	assert.False(t, exists("fg-child-0"), "dependents go before the owner")
	assert.False(t, exists("fg-child-1"))

	family("or")
	require.NoError(t, cms.Delete(ctx, "or", policy(metav1.DeletePropagationOrphan)))
	require.Eventually(t, func() bool { return !exists("or") }, 15*time.Second, 50*time.Millisecond)
	child, err := cms.Get(ctx, "or-child-0", metav1.GetOptions{})
	require.NoError(t, err, "orphans survive")
	assert.Empty(t, child.OwnerReferences)
}

// client-go's impersonation (rest.Config.Impersonate) and the self reviews, answered for the
// impersonated user from the real authorizer.
func TestClientGoImpersonationAndSelfReviews(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("carol-token,carol,1003\n"), 0o600))
	c, _ := startAllInOne(t, "--token-auth-file", tokens)
	ctx := context.Background()
	admin := clientset(t, c)
	createNamespace(t, admin, "imp")
	asBob := rest.CopyConfig(c.config)
	asBob.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"view"}}}
	bob := kubernetes.NewForConfigOrDie(asBob)

	ssr, err := bob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "bob", ssr.Status.UserInfo.Username)
	assert.Equal(t, []string{"devs", "system:authenticated"}, ssr.Status.UserInfo.Groups)
	assert.Equal(t, authenticationv1.ExtraValue{"view"}, ssr.Status.UserInfo.Extra["scopes"])

	canGet := func() bool {
		r, err := bob.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "imp"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	assert.False(t, canGet())
	_, err = bob.CoreV1().ConfigMaps("imp").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Contains(t, err.Error(), `User "bob" cannot list resource "configmaps" in API group "" in the namespace "imp"`)

	_, err = admin.RbacV1().RoleBindings("imp").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "devs-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, canGet, 5*time.Second, 10*time.Millisecond, "the binding to bob's impersonated group applies")
	_, err = bob.CoreV1().ConfigMaps("imp").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	rules, err := bob.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "imp"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	found := false
	for _, r := range rules.Status.ResourceRules {
		found = found || slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "list")
	}
	assert.True(t, found, "view's configmaps rule is among bob's rules: %+v", rules.Status.ResourceRules)

	local, err := admin.AuthorizationV1().LocalSubjectAccessReviews("imp").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: "imp"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", Groups: []string{"devs"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Resource: "configmaps", Namespace: "imp"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, local.Status.Allowed)

	// A user without the impersonate verb may not act as another.
	asCarol := rest.AnonymousClientConfig(c.config)
	asCarol.BearerToken = "carol-token"
	asCarol.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	_, err = kubernetes.NewForConfigOrDie(asCarol).CoreV1().ConfigMaps("imp").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	// kube 1.37 answers with constrained impersonation's refusal, its first mode for a user.
	assert.Contains(t, err.Error(), `configmaps is forbidden: User "carol" cannot impersonate-on:user-info:list resource "configmaps" in API group "" in the namespace "imp"`)
}
