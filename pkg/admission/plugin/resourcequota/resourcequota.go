// Package resourcequota is kube's ResourceQuota admission plugin (kube's own quota evaluator)
// with apichain's evaluators, which core's quota controller uses too.
package resourcequota

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/admission/plugin/limitranger"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// ResourceQuota is kube's ResourceQuota admission: kube's own quota evaluator
// (k8s.io/apiserver's plugin: per-namespace batching, the checks and messages, and the
// optimistic update of each quota's status.used), with apichain's evaluators: pods (compute
// requests and limits, scopes), and object counts for every kind the backend serves.
type ResourceQuota struct {
	evaluator resourcequota.Evaluator
}

// quotaIgnored are kube's resources quota never counts.
var quotaIgnored = map[schema.GroupResource]struct{}{
	{Resource: "bindings"}: {}, {Resource: "componentstatuses"}: {}, {Resource: "events"}: {},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}: {}, {Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}: {},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}: {}, {Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: {},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: {}, {Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}: {},
}

// New enforces the ResourceQuotas read (and updated) through client until stop
// closes.
func New(client *registry.Client, stop <-chan struct{}) *ResourceQuota {
	return &ResourceQuota{evaluator: resourcequota.NewQuotaEvaluator(quotaAccessor{client}, quotaIgnored, Registry(client),
		nil, &resourcequotaapi.Configuration{}, 5, stop)}
}

// Validate checks a namespaced create or update against its namespace's quotas and records
// what it uses; the namespace itself, subresources and dry runs are not charged.
func (q *ResourceQuota) Validate(_ context.Context, a admission.Attributes) error {
	if a.GetSubresource() != "" || a.GetNamespace() == "" || a.GetResource().GroupResource() == corev1.Resource("namespaces") {
		return nil
	}
	return q.evaluator.Evaluate(a)
}

type quotaAccessor struct{ client *registry.Client }

func (q quotaAccessor) resource() *registry.Resource {
	r, _ := q.client.Lookup(corev1.SchemeGroupVersion.WithResource("resourcequotas"))
	return r
}

func (q quotaAccessor) GetQuotas(namespace string) ([]corev1.ResourceQuota, error) {
	r := q.resource()
	if r == nil {
		return nil, nil
	}
	ctx := context.Background()
	// Most namespaces have no quota: the cache says so without reading etcd. Where there are
	// quotas they are read as stored, so their usage is not charged on a stale copy.
	objs, err := q.client.ListCached(ctx, r, namespace)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	if objs, err = q.client.List(ctx, r, namespace, ""); err != nil {
		return nil, err
	}
	out := make([]corev1.ResourceQuota, len(objs))
	for i, o := range objs {
		out[i] = *o.(*corev1.ResourceQuota)
	}
	return out, nil
}

func (q quotaAccessor) UpdateQuotaStatus(newQuota *corev1.ResourceQuota) error {
	ctx, cancel := context.WithTimeout(registry.WithFieldManager(context.Background(), "kube-apiserver"), 10*time.Second)
	defer cancel()
	return q.client.ReplaceStatus(ctx, q.resource(), newQuota)
}

// Registry has the quota evaluators of what client serves: pods, the object counts with
// kube's legacy names (configmaps, secrets, services, resourcequotas, ...), and
// count/<resource>.<group> for every other kind.
func Registry(client *registry.Client) quota.Registry {
	list := func(r *registry.Resource) generic.ListFuncByNamespace {
		return func(namespace string) ([]runtime.Object, error) {
			return client.List(context.Background(), r, namespace, "")
		}
	}
	aliases := map[string]corev1.ResourceName{"configmaps": corev1.ResourceConfigMaps, "secrets": corev1.ResourceSecrets,
		"services": corev1.ResourceServices, "resourcequotas": corev1.ResourceQuotas, "replicationcontrollers": corev1.ResourceReplicationControllers,
		"persistentvolumeclaims": corev1.ResourcePersistentVolumeClaims}
	var evaluators []quota.Evaluator
	for _, r := range client.Resources() {
		gr := r.GroupResource()
		if _, ignored := quotaIgnored[gr]; ignored || !r.Namespaced {
			continue
		}
		switch {
		case gr == corev1.Resource("pods"):
			evaluators = append(evaluators, &podQuota{list: list(r)})
		case gr.Group == "":
			evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, list(r), aliases[gr.Resource]))
		default:
			evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, list(r), ""))
		}
	}
	return generic.NewRegistry(evaluators)
}

// podQuota is kube's pod quota evaluator: a pod uses count/pods always and, until it ends,
// pods and its compute requests and limits (kube's pod-level and sidecar rules); quotas on
// cpu or memory need every container to say what it requests; the scopes are Terminating,
// NotTerminating, BestEffort, NotBestEffort, PriorityClass and CrossNamespacePodAffinity.
type podQuota struct {
	list generic.ListFuncByNamespace
}

var (
	podObjectCount = generic.ObjectCountQuotaResourceNameFor(corev1.Resource("pods"))
	podResourceSet = []corev1.ResourceName{podObjectCount, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourcePods}
	podResourcePrefixes = []string{corev1.ResourceHugePagesPrefix, corev1.ResourceRequestsHugePagesPrefix}
	// quotas on these need each container to request them (kube's backward compatibility).
	podConstrained = sets.New(string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceRequestsCPU),
		string(corev1.ResourceRequestsMemory), string(corev1.ResourceLimitsCPU), string(corev1.ResourceLimitsMemory))
)

func (p *podQuota) GroupResource() schema.GroupResource { return corev1.Resource("pods") }

func (p *podQuota) Constraints(required []corev1.ResourceName, item runtime.Object) error {
	pod, ok := item.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expect *v1.Pod, got %T", item)
	}
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		return nil // pod-level resources make container ones optional
	}
	requiredSet := sets.New[string]()
	for _, r := range required {
		if podConstrained.Has(string(r)) {
			requiredSet.Insert(string(r))
		}
	}
	missing := map[string]sets.Set[string]{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		have := sets.New[string]()
		for k := range computeUsage(c.Resources.Requests, c.Resources.Limits) {
			have.Insert(string(k))
		}
		for _, r := range sets.List(requiredSet.Difference(have)) {
			if missing[r] == nil {
				missing[r] = sets.New[string]()
			}
			missing[r].Insert(c.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for r := range missing {
		names = append(names, r)
	}
	sort.Strings(names)
	msgs := make([]string, len(names))
	for i, r := range names {
		msgs[i] = fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[r]), ","))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// Handles creates, and updates that change whether the pod is terminating.
func (p *podQuota) Handles(a admission.Attributes) bool {
	if a.GetSubresource() != "" {
		return false
	}
	if a.GetOperation() == admission.Update {
		pod, ok1 := a.GetObject().(*corev1.Pod)
		old, ok2 := a.GetOldObject().(*corev1.Pod)
		return ok1 && ok2 && terminating(pod) != terminating(old)
	}
	return a.GetOperation() == admission.Create
}

func (p *podQuota) Matches(q *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(q, item, p.MatchingResources, podMatchesScope)
}

func (p *podQuota) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	result := quota.Intersection(input, podResourceSet)
	for _, r := range input {
		if quota.ContainsPrefix(podResourcePrefixes, r) || extendedQuotaResource(r) {
			result = append(result, r)
		}
	}
	return result
}

func (p *podQuota) MatchingScopes(item runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	matched := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range selectors {
		ok, err := podMatchesScope(s, item)
		if err != nil {
			return []corev1.ScopedResourceSelectorRequirement{}, fmt.Errorf("error on matching scope %v: %v", s, err)
		}
		if ok {
			matched = append(matched, s)
		}
	}
	return matched, nil
}

func (p *podQuota) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	uncovered := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range limited {
		covered := false
		for _, m := range matched {
			covered = covered || m.ScopeName == s.ScopeName
		}
		if !covered {
			uncovered = append(uncovered, s)
		}
	}
	return uncovered, nil
}

func (p *podQuota) Usage(item runtime.Object) (corev1.ResourceList, error) {
	pod, ok := item.(*corev1.Pod)
	if !ok {
		return corev1.ResourceList{}, fmt.Errorf("expect *v1.Pod, got %T", item)
	}
	result := corev1.ResourceList{podObjectCount: *resource.NewQuantity(1, resource.DecimalSI)}
	if !chargedPod(pod) {
		return result, nil
	}
	return quota.Add(result, computeUsage(limitranger.PodResources(pod, true), limitranger.PodResources(pod, false))), nil
}

func (p *podQuota) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, p.list, podMatchesScope, p.Usage)
}

// computeUsage is what requests and limits count as: pods 1, cpu/memory/ephemeral-storage
// requests under both their plain and requests. names, limits under limits., hugepages and
// extended resources under requests.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, pair := range []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[pair.plain]; ok {
			out[pair.plain], out[pair.req] = q, q
		}
		if q, ok := limits[pair.plain]; ok {
			out[pair.lim] = q
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			out[name] = q
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		} else if strings.Contains(string(name), "/") && !strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix) {
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		}
	}
	return out
}

func extendedQuotaResource(name corev1.ResourceName) bool {
	rest, ok := strings.CutPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
	return ok && strings.Contains(rest, "/") && !strings.Contains(rest, corev1.ResourceDefaultNamespacePrefix)
}

// chargedPod: a pod that ended, or whose deletion grace period is over, uses no compute quota.
func chargedPod(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil &&
		time.Now().After(pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds)*time.Second)) {
		return false
	}
	return true
}

func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// bestEffort: no container (nor the pod) requests or limits cpu or memory.
func bestEffort(pod *corev1.Pod) bool {
	has := func(l corev1.ResourceList) bool {
		_, cpu := l[corev1.ResourceCPU]
		_, mem := l[corev1.ResourceMemory]
		return cpu || mem
	}
	if pod.Spec.Resources != nil && (has(pod.Spec.Resources.Requests) || has(pod.Spec.Resources.Limits)) {
		return false
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		if has(c.Resources.Requests) || has(c.Resources.Limits) {
			return false
		}
	}
	return true
}

func podMatchesScope(s corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if s.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		sel, err := scopeSelector(s)
		if err != nil {
			return false, fmt.Errorf("failed to parse and convert selector: %v", err)
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return sel.Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

func scopeSelector(s corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch s.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf("%q is not a valid scope selector operator", s.Operator)
	}
	r, err := labels.NewRequirement(string(s.ScopeName), op, s.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) bool {
		for _, t := range required {
			if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
				return true
			}
		}
		for _, t := range preferred {
			if len(t.PodAffinityTerm.Namespaces) != 0 || t.PodAffinityTerm.NamespaceSelector != nil {
				return true
			}
		}
		return false
	}
	if pa := a.PodAffinity; pa != nil && cross(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	pa := a.PodAntiAffinity
	return pa != nil && cross(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
}
