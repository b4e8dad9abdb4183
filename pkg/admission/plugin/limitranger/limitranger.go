// Package limitranger is kube's LimitRanger admission plugin: a pod's default requests and
// limits from its namespace's LimitRanges, and their min, max and ratio checks.
package limitranger

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
)

const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger is kube's LimitRanger admission plugin for pods: a pod being created gets its
// namespace's LimitRanges' default requests and limits for the containers that set none
// (noted in the kubernetes.io/limit-ranger annotation), and is refused when a container or
// the pod as a whole is outside a range's min, max or limit/request ratio. (kube also checks
// PersistentVolumeClaims, which apichain does not serve yet.)
type LimitRanger struct {
	client *registry.Client
}

// New reads LimitRanges through client.
func New(client *registry.Client) *LimitRanger { return &LimitRanger{client: client} }

func (l *LimitRanger) ranges(ctx context.Context, a admission.Attributes) (*corev1.Pod, []*corev1.LimitRange, error) {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok || a.GetSubresource() != "" || a.GetResource().GroupResource() != corev1.Resource("pods") {
		return nil, nil, nil
	}
	// Containers cannot change after creation: updates are not checked (kube's resize
	// subresource is not served).
	if a.GetOperation() != admission.Create {
		return nil, nil, nil
	}
	if old := a.GetOldObject(); old != nil {
		if acc, err := meta.Accessor(old); err == nil && acc.GetDeletionTimestamp() != nil {
			return nil, nil, nil
		}
	}
	r, ok := l.client.Lookup(corev1.SchemeGroupVersion.WithResource("limitranges"))
	if !ok {
		return nil, nil, nil
	}
	objs, err := l.client.ListCached(ctx, r, a.GetNamespace()) // as kube's lister
	if err != nil {
		return nil, nil, admission.NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.GetOperation(), a.GetResource()))
	}
	out := make([]*corev1.LimitRange, len(objs))
	for i, o := range objs {
		out[i] = o.(*corev1.LimitRange)
	}
	return pod, out, nil
}

// Admit sets the default requests and limits.
func (l *LimitRanger) Admit(ctx context.Context, a admission.Attributes) error {
	pod, ranges, err := l.ranges(ctx, a)
	if pod == nil || err != nil {
		return err
	}
	for _, lr := range ranges {
		defaults := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for k, v := range item.DefaultRequest {
				defaults.Requests[k] = v.DeepCopy()
			}
			for k, v := range item.Default {
				defaults.Limits[k] = v.DeepCopy()
			}
		}
		var notes []string
		for i := range pod.Spec.Containers {
			notes = mergeDefaults(&pod.Spec.Containers[i], defaults, "container", notes)
		}
		for i := range pod.Spec.InitContainers {
			notes = mergeDefaults(&pod.Spec.InitContainers[i], defaults, "init container", notes)
		}
		if len(notes) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
	return nil
}

func mergeDefaults(c *corev1.Container, defaults corev1.ResourceRequirements, kind string, notes []string) []string {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	var setLimits, setRequests []string
	for k, v := range defaults.Limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range defaults.Requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", kind, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", kind, c.Name))
	}
	return notes
}

// Validate refuses a pod outside its namespace's ranges.
func (l *LimitRanger) Validate(ctx context.Context, a admission.Attributes) error {
	pod, ranges, err := l.ranges(ctx, a)
	if pod == nil || err != nil {
		return err
	}
	for _, lr := range ranges {
		if err := validatePodLimits(lr, pod); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	check := func(limitType string, item corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		for k, v := range item.Min {
			if err := minConstraint(limitType, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for k, v := range item.Max {
			if err := maxConstraint(limitType, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for k, v := range item.MaxLimitRequestRatio {
			if err := ratioConstraint(limitType, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
				check(string(item.Type), item, c.Resources.Requests, c.Resources.Limits)
			}
		case corev1.LimitTypePod:
			check(string(item.Type), item, PodResources(pod, true), PodResources(pod, false))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// comparable returns the values at a common precision (milli-units unless that overflows).
func comparable(request, limit, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := request.Value(), limit.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return request.MilliValue(), limit.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := comparable(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := comparable(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, _ := comparable(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	observed := float64(l) / float64(r)
	display, maxRatio := observed, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, maxRatio = observed*1000, float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), display)
	}
	return nil
}

// PodResources is the pod's requests (or limits) as kube's LimitRanger counts them: its
// containers' sum, sidecars (restartable init containers) added, at least the largest init
// container's need; pod-level cpu and memory, when set, instead.
func PodResources(pod *corev1.Pod, requests bool) corev1.ResourceList {
	of := func(c corev1.Container) corev1.ResourceList {
		if requests {
			return c.Resources.Requests
		}
		return c.Resources.Limits
	}
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addResources(total, of(c))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		need := of(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(total, need)
			addResources(sidecars, need)
			need = sidecars
		} else {
			tmp := corev1.ResourceList{}
			addResources(tmp, need)
			addResources(tmp, sidecars)
			need = tmp
		}
		maxResources(initMax, need)
	}
	maxResources(total, initMax)
	if pod.Spec.Resources != nil {
		level := pod.Spec.Resources.Limits
		if requests {
			level = pod.Spec.Resources.Requests
		}
		for k, v := range level {
			if k == corev1.ResourceCPU || k == corev1.ResourceMemory {
				total[k] = v
			}
		}
	}
	return total
}

func addResources(list, more corev1.ResourceList) {
	for k, q := range more {
		if v, ok := list[k]; ok {
			v.Add(q)
			list[k] = v
		} else {
			list[k] = q.DeepCopy()
		}
	}
}

func maxResources(list, other corev1.ResourceList) {
	for k, q := range other {
		if v, ok := list[k]; !ok || q.Cmp(v) > 0 {
			list[k] = q.DeepCopy()
		}
	}
}
