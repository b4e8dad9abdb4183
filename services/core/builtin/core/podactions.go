package core

import (
	"context"
	"fmt"
	"net/http"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A pod's subresources served in core: binding and eviction (creates), ephemeralcontainers and
// resize (partial updates). The connecting ones (log, exec, attach, portforward, proxy) are the
// gateway's.

// A pod's subresources served in core: binding and eviction (creates), ephemeralcontainers and
// resize (partial updates). The connecting ones (log, exec, attach, portforward, proxy) are the
// gateway's.

var bindingKind = corev1.SchemeGroupVersion.WithKind("Binding")

// bindingAction assigns a pod to a node, as kube's scheduler does through pods/binding or
// v1 bindings: spec.nodeName, the binding's annotations and PodScheduled=True, written at
// once and only on a pod that has no node yet.
func bindingAction(pods func() *registry.Resource) *registry.Action {
	return &registry.Action{Kind: bindingKind, New: registry.Of[corev1.Binding](),
		Do: func(ctx context.Context, c *registry.Client, namespace, name string, body runtime.Object) (runtime.Object, int, error) {
			b := body.(*corev1.Binding)
			if name != "" && name != b.Name { // pods/<name>/binding
				return nil, 0, apierrors.NewBadRequest("name in URL does not match name in Binding object")
			}
			if errs := validatePodBinding(b); len(errs) > 0 {
				// kube answers with the bare aggregate: a 500 without a reason
				return nil, 0, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
					Code: http.StatusInternalServerError, Message: errs.ToAggregate().Error()}}
			}
			_, err := c.Rewrite(ctx, pods(), namespace, b.Name, func(o runtime.Object) error {
				p := o.(*corev1.Pod)
				var why string
				switch {
				case b.UID != "" && b.UID != p.UID:
					return apierrors.NewConflict(corev1.Resource("pods"), b.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, p.UID))
				case b.ResourceVersion != "" && b.ResourceVersion != p.ResourceVersion:
					return apierrors.NewConflict(corev1.Resource("pods"), b.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", b.ResourceVersion, p.ResourceVersion))
				case p.DeletionTimestamp != nil:
					why = fmt.Sprintf("pod %s is being deleted, cannot be assigned to a host", p.Name)
				case p.Spec.NodeName != "":
					why = fmt.Sprintf("pod %v is already assigned to node %q", p.Name, p.Spec.NodeName)
				case len(p.Spec.SchedulingGates) != 0:
					why = fmt.Sprintf("pod %v has non-empty .spec.schedulingGates", p.Name)
				}
				if why != "" {
					return apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, fmt.Errorf("%s", why))
				}
				p.Spec.NodeName = b.Target.Name
				p.Status.NominatedNodeName = ""
				if len(b.Annotations) > 0 && p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				for k, v := range b.Annotations {
					p.Annotations[k] = v
				}
				setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
				return nil
			})
			if err != nil {
				return nil, 0, err
			}
			return registry.StatusSuccess(http.StatusCreated), http.StatusCreated, nil
		}}
}

func validatePodBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// setPodCondition adds or updates a condition, stamping its transition time when its status
// changes, as kube's UpdatePodCondition does.
func setPodCondition(s *corev1.PodStatus, c corev1.PodCondition) {
	now := metav1.Now().Rfc3339Copy()
	c.LastTransitionTime = now
	for i := range s.Conditions {
		old := &s.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

var evictionKind = policyv1.SchemeGroupVersion.WithKind("Eviction")

// evictionAction deletes a pod as kube's eviction does. A pod that is not running (pending,
// succeeded or failed, as every pod of a cluster without kubelets is) is deleted without
// consulting disruption budgets; a running one only when no budget selects it, since no
// disruption controller computes the budgets' allowances here.
func evictionAction(pods, budgets func() *registry.Resource) *registry.Action {
	return &registry.Action{Kind: evictionKind, New: registry.Of[policyv1.Eviction](),
		Do: func(ctx context.Context, c *registry.Client, namespace, name string, body runtime.Object) (runtime.Object, int, error) {
			ev := body.(*policyv1.Eviction)
			if ev.Name != name {
				return nil, 0, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
			}
			o, err := c.Get(ctx, pods(), namespace, name)
			if err != nil {
				return nil, 0, err
			}
			p := o.(*corev1.Pod)
			if running := p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodUnknown; running {
				pdbs, err := c.List(ctx, budgets(), namespace, "")
				if err != nil {
					return nil, 0, err
				}
				for _, b := range pdbs {
					pdb := b.(*policyv1.PodDisruptionBudget)
					if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) &&
						pdb.Status.DisruptionsAllowed <= 0 {
						return nil, 0, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
					}
				}
			}
			opts := ev.DeleteOptions
			if opts == nil {
				opts = &metav1.DeleteOptions{}
			}
			if _, err := c.Delete(ctx, pods(), namespace, name, opts); err != nil {
				return nil, 0, err
			}
			return registry.StatusSuccess(http.StatusCreated), http.StatusCreated, nil
		}}
}

// podMerges are the pod's partial-update subresources.
var podMerges = map[string]func(next, changed runtime.Object){
	"ephemeralcontainers": func(next, changed runtime.Object) {
		next.(*corev1.Pod).Spec.EphemeralContainers = changed.(*corev1.Pod).Spec.EphemeralContainers
	},
	// resize changes containers' resources and resize policies only.
	"resize": func(next, changed runtime.Object) {
		n, c := &next.(*corev1.Pod).Spec, &changed.(*corev1.Pod).Spec
		for _, lists := range [][2][]corev1.Container{{n.Containers, c.Containers}, {n.InitContainers, c.InitContainers}} {
			for i := range lists[0] {
				for _, cc := range lists[1] {
					if cc.Name == lists[0][i].Name {
						lists[0][i].Resources, lists[0][i].ResizePolicy = cc.Resources, cc.ResizePolicy
					}
				}
			}
		}
	},
}
