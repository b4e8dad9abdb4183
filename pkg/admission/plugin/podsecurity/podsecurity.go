// Package podsecurity is kube's PodSecurity admission plugin, on kube's library
// (k8s.io/pod-security-admission).
package podsecurity

import (
	"context"
	"errors"
	"fmt"

	"github.com/apichain/apichain/pkg/registry"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// PodSecurity is kube's PodSecurity admission (k8s.io/pod-security-admission, the library
// kube-apiserver's plugin wraps): the pod-security.kubernetes.io/{enforce,audit,warn}
// labels of a namespace are validated, pods are refused (enforce) or warned about (warn) at
// the level the labels name, pod controllers' templates get warnings, and a namespace whose
// enforce level is raised warns about its existing pods. Defaults are kube's: privileged at
// latest for all three modes, no exemptions.
type PodSecurity struct {
	delegate *psadmission.Admission
}

// New reads namespaces and pods through client.
func New(client *registry.Client) (*PodSecurity, error) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	a := &psadmission.Admission{
		Configuration: &psconfig.PodSecurityConfiguration{Defaults: psconfig.PodSecurityDefaults{
			Enforce: "privileged", EnforceVersion: "latest", Audit: "privileged", AuditVersion: "latest", Warn: "privileged", WarnVersion: "latest"}},
		Evaluator:        evaluator,
		Metrics:          metrics.NewPrometheusRecorder(psapi.GetAPIVersion()),
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  podSecurityNamespaces{client},
		PodLister:        podSecurityPods{client},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, err
	}
	return &PodSecurity{delegate: a}, nil
}

// Validate evaluates a create or update of a namespace, pod or pod controller.
func (p *PodSecurity) Validate(ctx context.Context, a admission.Attributes) error {
	op := a.GetOperation()
	if op != admission.Create && op != admission.Update {
		return nil
	}
	gr := a.GetResource().GroupResource()
	if gr != corev1.Resource("namespaces") && gr != corev1.Resource("pods") && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	result := p.delegate.Validate(ctx, podSecurityAttributes{a})
	registry.AddWarnings(ctx, result.Warnings...)
	for k, v := range result.AuditAnnotations {
		_ = a.AddAnnotation("pod-security.kubernetes.io/"+k, v)
	}
	if result.Allowed {
		return nil
	}
	var status *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New("Not allowed by PodSecurity")), &status) {
		return apierrors.NewForbidden(gr, a.GetName(), errors.New("Not allowed by PodSecurity"))
	}
	if r := result.Result; r != nil {
		if r.Message != "" {
			status.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			status.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			status.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			status.ErrStatus.Code = r.Code
		}
	}
	return status
}

// podSecurityAttributes presents admission attributes as the library's.
type podSecurityAttributes struct{ a admission.Attributes }

func (p podSecurityAttributes) GetName() string                          { return p.a.GetName() }
func (p podSecurityAttributes) GetNamespace() string                     { return p.a.GetNamespace() }
func (p podSecurityAttributes) GetResource() schema.GroupVersionResource { return p.a.GetResource() }
func (p podSecurityAttributes) GetKind() schema.GroupVersionKind         { return p.a.GetKind() }
func (p podSecurityAttributes) GetSubresource() string                   { return p.a.GetSubresource() }
func (p podSecurityAttributes) GetOperation() admissionv1.Operation {
	return admissionv1.Operation(p.a.GetOperation())
}
func (p podSecurityAttributes) GetObject() (runtime.Object, error)    { return p.a.GetObject(), nil }
func (p podSecurityAttributes) GetOldObject() (runtime.Object, error) { return p.a.GetOldObject(), nil }
func (p podSecurityAttributes) GetUserName() string {
	if u := p.a.GetUserInfo(); u != nil {
		return u.GetName()
	}
	return ""
}

// podSecurityNamespaces reads namespaces from the watch cache, and from etcd when the cache
// does not have one yet.
type podSecurityNamespaces struct{ client *registry.Client }

func (n podSecurityNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	r, ok := n.client.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return nil, fmt.Errorf("namespaces are not served here")
	}
	obj, err := n.client.Get(ctx, r, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

type podSecurityPods struct{ client *registry.Client }

func (p podSecurityPods) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	r, ok := p.client.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	if !ok {
		return nil, nil
	}
	objs, err := p.client.ListCached(ctx, r, namespace)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*corev1.Pod)
	}
	return pods, nil
}
