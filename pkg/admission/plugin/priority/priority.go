// Package priority is kube's Priority admission plugin: a pod's priority from its
// PriorityClass, or the global default.
package priority

import (
	"context"
	"fmt"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

// Priority is kube's Priority admission plugin: a pod being created gets the priority (and
// preemption policy) of its PriorityClass, or of the global default class, or 0; a pod naming
// a class that does not exist, or a priority its class does not give, is refused; a pod
// update keeps the priority set at creation. Only one PriorityClass may be the global default.
type Priority struct {
	client *registry.Client
}

// New reads PriorityClasses through client.
func New(client *registry.Client) *Priority { return &Priority{client: client} }

func (p *Priority) classes(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
	r, ok := p.client.Lookup(schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"))
	if !ok {
		return nil, nil
	}
	objs, err := p.client.ListCached(ctx, r, "")
	if err != nil {
		return nil, err
	}
	out := make([]*schedulingv1.PriorityClass, len(objs))
	for i, o := range objs {
		out[i] = o.(*schedulingv1.PriorityClass)
	}
	return out, nil
}

// globalDefault is the default class with the lowest value (a race may have made two).
func globalDefault(classes []*schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var d *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pc.GlobalDefault && (d == nil || d.Value > pc.Value) {
			d = pc
		}
	}
	return d
}

// Admit sets a pod's priority.
func (p *Priority) Admit(ctx context.Context, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok || a.GetSubresource() != "" || a.GetResource().GroupResource() != corev1.Resource("pods") {
		return nil
	}
	switch a.GetOperation() {
	case admission.Update:
		if old, ok := a.GetOldObject().(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	case admission.Create:
	default:
		return nil
	}
	classes, err := p.classes(ctx)
	if err != nil {
		return err
	}
	name, priority, policy := "", int32(0), ptr.To(corev1.PreemptLowerPriority)
	if pod.Spec.PriorityClassName == "" {
		if d := globalDefault(classes); d != nil {
			name, priority, policy = d.Name, d.Value, d.PreemptionPolicy
		}
	} else {
		var found *schedulingv1.PriorityClass
		for _, pc := range classes {
			if pc.Name == pod.Spec.PriorityClassName {
				found = pc
			}
		}
		if found == nil {
			return admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		name, priority, policy = found.Name, found.Value, found.PreemptionPolicy
	}
	pod.Spec.PriorityClassName = name
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pod.Spec.PreemptionPolicy = ptr.To(*policy)
	}
	return nil
}

// Validate keeps a second global default out.
func (p *Priority) Validate(ctx context.Context, a admission.Attributes) error {
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok || a.GetSubresource() != "" || (a.GetOperation() != admission.Create && a.GetOperation() != admission.Update) || !pc.GlobalDefault {
		return nil
	}
	classes, err := p.classes(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %v", err))
	}
	if d := globalDefault(classes); d != nil && (a.GetOperation() == admission.Create || d.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", d.Name))
	}
	return nil
}
