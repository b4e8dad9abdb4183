// Package namespace is apichain's namespace deletion controller, after kube-controller-manager's
// (k8s.io/kubernetes/pkg/controller/namespace/deletion). It works through the API as kube's
// does, so it reaches everything the chain serves: core's resources, extensions' custom
// resources and the aggregated APIs. A namespace being deleted has every namespaced resource
// that discovery lists deleted in it (pods first), kube's status conditions say what remains and
// why, and once nothing remains its "kubernetes" finalizer is removed.
//
// Unlike kube's, an aggregated API that does not answer discovery does not hold the namespace
// forever: its group is left out (the DiscoveryFailed condition names it while the namespace
// waits for the rest), so one dead APIService cannot stop every namespace deletion.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Controller deletes the content of namespaces being deleted. It links client-go's core/v1
// client, discovery and metadata clients only (the whole clientset and its informers would add
// 20 MB to every binary).
type Controller struct {
	core       rest.Interface // for the informer's list and watch
	namespaces corev1client.NamespaceInterface
	discovery  discovery.DiscoveryInterface
	metadata   metadata.Interface
	// complete says whether every link of the chain has a ready instance: without one, its
	// groups are missing from discovery and nothing is finalized.
	complete func() bool
	log      *slog.Logger
}

// New makes a controller that works through config.
func New(config *rest.Config, complete func() bool, log *slog.Logger) (*Controller, error) {
	core, err := corev1client.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &Controller{core: core.RESTClient(), namespaces: core.Namespaces(), discovery: dc, metadata: md, complete: complete, log: log}, nil
}

// Run works until ctx ends: on every change to a namespace being deleted, and every resync
// while one is (its content may wait on finalizers or graceful deletion).
func (c *Controller) Run(ctx context.Context, resync time.Duration) {
	informer := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(c.core, "namespaces", "", fields.Everything()),
		&corev1.Namespace{}, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		var found discovered // once per pass, however many namespaces wait
		for _, o := range informer.GetStore().List() {
			ns := o.(*corev1.Namespace)
			if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
				continue
			}
			if err := c.sync(ctx, ns.Name, &found); err != nil && ctx.Err() == nil && !errors.Is(err, errRemaining) {
				c.log.Warn("namespace deletion", "namespace", ns.Name, "err", err)
			}
		}
		return nil // a namespace that waits is synced again at its next change or the resync
	}, changed)
}

// errRemaining: content remains, the namespace waits.
var errRemaining = errors.New("content remains")

// discovered is what discovery listed in one pass, asked for at most once.
type discovered struct {
	asked bool
	lists []*metav1.APIResourceList
	err   error
}

func (c *Controller) discover(d *discovered) ([]*metav1.APIResourceList, error) {
	if !d.asked {
		d.asked = true
		d.lists, d.err = discovery.ServerPreferredNamespacedResources(c.discovery)
	}
	return d.lists, d.err
}

// sync deletes what is in the namespace and finalizes it once nothing is; found is this
// pass's discovery.
func (c *Controller) sync(ctx context.Context, name string, found *discovered) error {
	ns, err := c.namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	if !c.complete() {
		return errors.New("the delegation chain is incomplete: waiting for every service")
	}
	conditions := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	lists, err := c.discover(found)
	var failed *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &failed):
		conditions[corev1.NamespaceDeletionDiscoveryFailure] = failure(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed",
			fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(failed.Groups), err))
	case err != nil:
		return err
	}
	resources, err := discovery.GroupVersionResources(discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, lists))
	if err != nil {
		conditions[corev1.NamespaceDeletionGVParsingFailure] = failure(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
	}
	verbs := map[schema.GroupVersionResource][]string{}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			verbs[gv.WithResource(r.Name)] = r.Verbs
		}
	}
	order := make([]schema.GroupVersionResource, 0, len(resources))
	for gvr := range resources {
		order = append(order, gvr)
	}
	// Pods first, alone: the rest waits until they are gone, as in kube.
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	slices.SortFunc(order, func(a, b schema.GroupVersionResource) int {
		if (a == pods) != (b == pods) {
			if a == pods {
				return -1
			}
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	remaining, byFinalizer := map[string]int{}, map[string]int{}
	var deleteErrs []string
	for _, gvr := range order {
		n, finalizers, err := c.deleteAll(ctx, gvr, name, verbs[gvr])
		if err != nil {
			deleteErrs = append(deleteErrs, err.Error())
		}
		if n > 0 {
			remaining[gvr.Resource+"."+gvr.Group] += n
			for f, k := range finalizers {
				byFinalizer[f] += k
			}
			if gvr == pods {
				break
			}
		}
	}
	if len(deleteErrs) > 0 {
		sort.Strings(deleteErrs)
		conditions[corev1.NamespaceDeletionContentFailure] = failure(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(deleteErrs), strings.Join(deleteErrs, ", ")))
	}
	if len(remaining) > 0 {
		conditions[corev1.NamespaceContentRemaining] = failure(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+counts(remaining, "%s has %d resource instances"))
	}
	if len(byFinalizer) > 0 {
		conditions[corev1.NamespaceFinalizersRemaining] = failure(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+counts(byFinalizer, "%s in %d resource instances"))
	}
	if updateConditions(&ns.Status, conditions, time.Now()) {
		if ns, err = c.namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) { // another gateway's controller wrote it: the next pass sees it
				return nil
			}
			return err
		}
	}
	if len(remaining) > 0 || len(deleteErrs) > 0 {
		return errRemaining
	}
	if failed != nil {
		c.log.Warn("namespace finalized without the groups whose discovery failed; their objects in it, if any, are left", "namespace", name, "err", failed)
	}
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	_, err = c.namespaces.Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or changed: the next pass sees it again
		return nil
	}
	return err
}

// deleteAll deletes gvr's objects in namespace (deletecollection, else each) in the
// background, and says how many remain and which finalizers hold them.
func (c *Controller) deleteAll(ctx context.Context, gvr schema.GroupVersionResource, namespace string, verbs []string) (int, map[string]int, error) {
	client := c.metadata.Resource(gvr).Namespace(namespace)
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	canList := slices.Contains(verbs, "list")
	deleted := false
	if slices.Contains(verbs, "deletecollection") {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
			deleted = true
		case !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err):
			return 0, nil, err
		}
	}
	if !canList {
		return 0, nil, nil
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if !deleted {
		for _, item := range list.Items {
			if item.DeletionTimestamp != nil {
				continue
			}
			if err := client.Delete(ctx, item.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return 0, nil, err
			}
		}
		if list, err = client.List(ctx, metav1.ListOptions{}); err != nil {
			return 0, nil, err
		}
	}
	finalizers := map[string]int{}
	for _, item := range list.Items {
		for _, f := range item.Finalizers {
			finalizers[f]++
		}
	}
	return len(list.Items), finalizers, nil
}

// The conditions the controller keeps, and what each says when all is well (kube's).
var conditionTypes = []struct {
	t               corev1.NamespaceConditionType
	reason, message string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

func failure(t corev1.NamespaceConditionType, reason, message string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message}
}

// updateConditions sets every kept condition: the failing ones as given, the others to their
// all-well form; it reports whether anything changed.
func updateConditions(status *corev1.NamespaceStatus, failing map[corev1.NamespaceConditionType]corev1.NamespaceCondition, now time.Time) bool {
	changed := false
	for _, ct := range conditionTypes {
		want, ok := failing[ct.t]
		if !ok {
			want = corev1.NamespaceCondition{Type: ct.t, Status: corev1.ConditionFalse, Reason: ct.reason, Message: ct.message}
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == ct.t })
		if i < 0 {
			want.LastTransitionTime = metav1.NewTime(now)
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		old := &status.Conditions[i]
		if old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message {
			continue
		}
		if old.Status != want.Status {
			old.LastTransitionTime = metav1.NewTime(now)
		}
		old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
		changed = true
	}
	return changed
}

// counts lists what n counts, sorted, each as format says.
func counts(n map[string]int, format string) string {
	out := make([]string, 0, len(n))
	for k, v := range n {
		out = append(out, fmt.Sprintf(format, k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
