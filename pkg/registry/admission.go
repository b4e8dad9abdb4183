package registry

import (
	"context"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/spans"
	"github.com/apichain/apichain/pkg/user"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	kubeuser "k8s.io/apiserver/pkg/authentication/user"
)

// Admission is the admission chain a Handler runs on every write, as kube-apiserver's:
// Admit (mutating admission) sees the object as decoded from the request with the kind's
// defaults applied (kube defaults on decoding), before the kind's validation, and returns the
// object to go on with; Validate (validating admission) sees the final object after
// validation, just before storage. Both run for dry-run requests too.
type Admission interface {
	Admit(ctx context.Context, a admission.Attributes) (runtime.Object, error)
	Validate(ctx context.Context, a admission.Attributes) error
}

// SetAdmission installs the admission chain (none: every write is admitted).
func (h *Handler) SetAdmission(a Admission) { h.admission = a }

// loopbackUser is the identity of writes that did not come through the gateway (the
// backend's own controllers), as kube's loopback client.
var loopbackUser = &kubeuser.DefaultInfo{Name: kubeuser.APIServerUser, Groups: []string{kubeuser.SystemPrivilegedGroup, kubeuser.AllAuthenticated}}

// attributes describes a write to admission. obj and old are the objects of the request's
// (sub)resource (a Scale for the scale subresource), typed with their kind as webhooks
// receive them; deleteOpts are a delete's options.
func (h *Handler) attributes(ctx context.Context, r *Resource, op admission.Operation, sub string, obj, old runtime.Object,
	namespace, name string, dryRun bool, deleteOpts *metav1.DeleteOptions) admission.Attributes {
	kind := r.GroupVersion.WithKind(r.Kind)
	if sub == "scale" {
		kind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	}
	for _, o := range []runtime.Object{obj, old} {
		if o != nil {
			o.GetObjectKind().SetGroupVersionKind(kind)
		}
	}
	var info kubeuser.Info = loopbackUser
	if u, ok := user.From(ctx); ok {
		info = &kubeuser.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	var opts runtime.Object
	switch op {
	case admission.Create:
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: dry, FieldManager: managerFrom(ctx)}
	case admission.Update:
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, DryRun: dry, FieldManager: managerFrom(ctx)}
	case admission.Delete:
		d := deleteOpts.DeepCopy()
		if d == nil {
			d = &metav1.DeleteOptions{}
		}
		d.APIVersion, d.Kind = "meta.k8s.io/v1", "DeleteOptions"
		opts = d
	}
	return &annotated{ctx: ctx, h: h, r: r, Attributes: admission.NewAttributesRecord(obj, old, kind, namespace, name, r.GroupVersionResource(), sub, op, opts, dryRun, info)}
}

// annotated sends the audit annotations admission adds with the response of the current
// gRPC call, for the gateway's audit event (at every level: the event's level decides).
type annotated struct {
	admission.Attributes
	ctx context.Context
	h   *Handler
	r   *Resource
}

// ObjectInterfaces are the scheme's for a built-in kind, unstructured ones for a custom
// resource (mutating admission policies patch the object with them).
func (a *annotated) ObjectInterfaces() admission.ObjectInterfaces {
	if a.r.isUnstructured() {
		return unstructuredInterfaces{}
	}
	return admission.NewObjectInterfacesFromScheme(a.h.scheme.Scheme)
}

// TypeConverter types the request's kind for an ApplyConfiguration patch, as server-side
// apply types it.
func (a *annotated) TypeConverter() (managedfields.TypeConverter, error) {
	if a.r.isUnstructured() {
		if a.r.TypeConverter != nil {
			return a.r.TypeConverter, nil
		}
		return deducedTypeConverter, nil
	}
	return a.h.managers().converter(a.r.Kind)
}

// unstructuredInterfaces are a custom resource's object interfaces: one version, no defaults
// beyond its schema's.
type unstructuredInterfaces struct{}

func (unstructuredInterfaces) GetObjectCreater() runtime.ObjectCreater     { return unstructuredCreater{} }
func (unstructuredInterfaces) GetObjectTyper() runtime.ObjectTyper         { return unstructuredTyper{} }
func (unstructuredInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return nopDefaulter{} }
func (unstructuredInterfaces) GetObjectConvertor() runtime.ObjectConvertor {
	return unstructuredConvertor{}
}
func (unstructuredInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return runtime.NewEquivalentResourceRegistry()
}

type unstructuredTyper struct{}

func (unstructuredTyper) ObjectKinds(o runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{o.GetObjectKind().GroupVersionKind()}, false, nil
}
func (unstructuredTyper) Recognizes(schema.GroupVersionKind) bool { return true }

func (a *annotated) AddAnnotation(key, value string) error {
	_ = grpc.SetHeader(a.ctx, metadata.Pairs(rpcstatus.AuditAnnotationMetadataKey, key+"="+value))
	return nil
}

func (a *annotated) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	return a.AddAnnotation(key, value)
}

// admit runs mutating admission on a write (nothing without a chain).
func (h *Handler) admit(ctx context.Context, a admission.Attributes) (runtime.Object, error) {
	if h.admission == nil {
		return a.GetObject(), nil
	}
	ctx, span := admissionSpan(ctx, "Mutating admission", a)
	defer span.End()
	return h.admission.Admit(ctx, a)
}

// validateAdmission runs validating admission on a write (nothing without a chain).
func (h *Handler) validateAdmission(ctx context.Context, a admission.Attributes) error {
	if h.admission == nil {
		return nil
	}
	ctx, span := admissionSpan(ctx, "Validating admission", a)
	defer span.End()
	return h.admission.Validate(ctx, a)
}

// admissionSpan is the span of one admission step (kube's admit or validate; the webhooks'
// calls are its children). kube's handlers have no span of their own for it, only the
// step's metric.
func admissionSpan(ctx context.Context, name string, a admission.Attributes) (context.Context, oteltrace.Span) {
	if !spans.Recording(ctx) {
		return spans.Start(ctx, name)
	}
	return spans.Start(ctx, name, attribute.String("operation", string(a.GetOperation())),
		attribute.Stringer("resource", a.GetResource()), attribute.String("subresource", a.GetSubresource()))
}

// updateAttributes describes an update of ref's object from old to obj (full objects; a scale
// update is admitted as the Scales of both).
func (h *Handler) updateAttributes(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, obj, old runtime.Object, dryRun bool) admission.Attributes {
	sub := ref.GetSubresource()
	if sub == "scale" {
		if _, ok := obj.(*autoscalingv1.Scale); !ok {
			if sc, err := toScale(r, obj); err == nil {
				obj = sc
			}
		}
		if sc, err := toScale(r, old); err == nil {
			old = sc
		}
	}
	return h.attributes(ctx, r, admission.Update, sub, obj, old, ref.GetNamespace(), ref.GetName(), dryRun, nil)
}
