package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/openapi"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource defines one served resource: its names, scope, types and the rules that differ
// from kind to kind. Everything else is the generic machinery's.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Name is the plural resource name ("configmaps").
	Name         string
	SingularName string
	Kind         string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	// VerbsServed, when set, are the only verbs served on the resource (kube serves no
	// deletecollection on namespaces); the default is all eight, or create for a review.
	VerbsServed []string
	// Allocate takes from a shared pool what a new (old nil) or changed object needs (a
	// Service's cluster IPs and node ports), before validation; undo gives it back when the
	// write does not happen. A FieldErrors error is the kind's 422.
	Allocate func(ctx context.Context, obj, old runtime.Object, dryRun bool) (undo func(), err error)
	// Release frees what an object no longer holds after it was updated (obj the new, old the
	// previous) or deleted (obj nil).
	Release func(ctx context.Context, obj, old runtime.Object)
	// Actions are creates served by functions, by subresource ("" for a resource that stores
	// nothing, whose only verb is create).
	Actions map[string]*Action
	// Merges are subresources that change part of an object (get, update and patch serve
	// them): each copies its part from the client's object into a copy of the current one (a
	// pod's ephemeralcontainers and resize, a CSR's approval).
	Merges map[string]func(next, changed runtime.Object)
	// Computed, when set, makes the resource read-only and unstored: get and list answer what
	// it returns (kube's componentstatuses).
	Computed func(ctx context.Context) ([]runtime.Object, error)
	// Subresources the kind has: "status", "scale", "finalize", the merges and the actions are
	// served here; others ("token", "exec") are only listed in discovery for the gateway to
	// answer.
	Subresources []string

	New     func() runtime.Object
	NewList func() runtime.Object

	// ValidateName checks names (default: a DNS subdomain, as for most kinds).
	ValidateName apivalidation.ValidateNameFunc
	// Validate checks kind-specific rules on create and update (object metadata is checked
	// generically).
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateCreate checks rules that apply on create only (a kind whose update rules differ,
	// as a CRD's ratchet).
	ValidateCreate func(obj runtime.Object) field.ErrorList
	// StoragePrefix is where objects are kept under the etcd prefix when it is not kube's
	// default for a built-in kind (its name, or one of kube's special prefixes): custom
	// resources, CRDs and APIServices are kept under "<group>/<resource>".
	StoragePrefix string
	// StorageMediaType, when set, is the media type objects are stored in whatever the
	// handler's: kube keeps APIServices and CRDs as JSON (the aggregator's and apiextensions'
	// legacy codecs).
	StorageMediaType string
	// StoredAs is the group/version objects are stored in when it is not the resource's own (a
	// custom resource served in several versions is stored in its CRD's storage version).
	StoredAs schema.GroupVersion
	// ConvertVersion converts a custom resource between its CRD's versions when its
	// conversion strategy is not None (kube's converter for a Webhook: one ConversionReview per
	// object, a list's items each, as kube's storage decodes them): what is read from storage
	// to the resource's version, what is written to StoredAs. Its errors are reported as kube
	// reports them (a corrupt object on reads, a 500 on writes). A resource with one is not
	// watch-cached: a failing webhook fails the requests that need it, as in kube, and a cache
	// never stalls on it.
	ConvertVersion func(obj runtime.Object, to schema.GroupVersion) (runtime.Object, error)
	// Convert, when set, stores a typed kind in another version (kube keeps autoscaling/v1
	// HorizontalPodAutoscalers as autoscaling/v2, and events.k8s.io/v1 Events as core/v1's,
	// under the stored group's keys).
	Convert *Conversion
	// TypeConverter types a custom resource's objects for server-side apply (from its
	// schema); without one they are typed by their content.
	TypeConverter managedfields.TypeConverter
	// UnknownFields lists the fields of obj its schema does not know (a custom resource's),
	// for fieldValidation; typed kinds find theirs when decoding.
	UnknownFields func(obj runtime.Object) []string
	// ValidatesMeta says the kind's own validation covers object metadata (kube's CRD
	// validation does), so the generic rules do not report the same error twice.
	ValidatesMeta bool
	// ValidateUpdate checks kind-specific rules on update, e.g. immutable fields.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// AuthorizeWrite refuses a create (old nil) or update that the request's user may not
	// make although the gateway authorized the verb: kube's RBAC escalation prevention.
	AuthorizeWrite func(ctx context.Context, obj, old runtime.Object) error
	// ValidateDelete refuses deleting the named object (kube's immortal namespaces).
	ValidateDelete func(name string) error
	// Default applies the kind's defaults to an object decoded from a request (create, update,
	// patch and apply results alike), before admission sees it, as kube defaults on decoding.
	Default func(obj runtime.Object)
	// PrepareForCreate clears and sets the fields a client may not set (the strategy's work).
	PrepareForCreate func(ctx context.Context, obj runtime.Object)
	// ResetStatusMeta puts back the metadata a status write may not change, as the kind's
	// status strategy in kube does (metav1.ResetObjectMetaForStatus for most newer kinds and
	// custom resources; a Deployment's labels; a Pod's ownerReferences). Nil: as most built-in
	// kinds, a status write may change labels, annotations, finalizers and ownerReferences.
	ResetStatusMeta func(next, old metav1.Object)
	// PrepareForUpdate adjusts an update of the main resource or its status after the generic
	// merge (status kept or taken, generation bumped): a CRD records its new storage version, a
	// custom resource is pruned and defaulted.
	PrepareForUpdate func(obj, old runtime.Object)
	// FieldLabels returns the kind-specific field selector values, under the labels
	// FieldLabelConversion gives (metadata.name and, for namespaced kinds, metadata.namespace
	// are always there).
	FieldLabels func(obj runtime.Object) fields.Set
	// FieldLabelConversion is the kind's field label conversion, as kube registers one per
	// version (AddFieldLabelConversionFunc): which labels a field selector may use, the label
	// FieldLabels gives each one's value under, and the kind's own error for the others. Nil is
	// kube's default: metadata.name and metadata.namespace only.
	FieldLabelConversion runtime.FieldLabelConversionFunc
	// NameCell, when set, is the Name column's text (kube marks the default IngressClass and
	// StorageClass with " (default)").
	NameCell func(obj runtime.Object) string
	// Columns and Cells are the kind's Table columns after Name (Age is added last unless
	// the kind places it itself with AgeColumn, or shows "Created At" instead).
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object) []any
	// TableOrder orders a list's Table rows when kube's printer does (FlowSchemas by
	// precedence); the list itself keeps storage order.
	TableOrder func(a, b runtime.Object) int
	// Scale locates a custom resource's scale (its "scale" subresource); typed kinds keep
	// theirs in spec.replicas.
	Scale *ScalePaths
	// NoAgeColumn: the columns are all the kind shows (a custom resource's printer columns).
	NoAgeColumn bool
	// PendingDeletion reports kind-specific reasons a delete must wait (a namespace's
	// spec.finalizers); metadata.finalizers always count.
	PendingDeletion func(obj runtime.Object) bool
	// OnDeletionStart changes an object when its deletion starts (a namespace goes Terminating).
	OnDeletionStart func(obj runtime.Object)
	// GracefulDelete makes deletion graceful (kube's CheckGracefulDelete): it sets
	// opts.GracePeriodSeconds to the grace the object gets (0: deleted at once) and returns
	// true. A deletion with a grace period marks the object (deletionTimestamp at the end of the
	// grace, deletionGracePeriodSeconds) and leaves it to be deleted again with grace 0.
	GracefulDelete func(obj runtime.Object, opts *metav1.DeleteOptions) bool
	// Review marks a create-only review API (TokenReview, SubjectAccessReview, ...) that the
	// gateway answers from the identity and authorizer it applied; the backend only lists it.
	Review bool
	// HasSpec tells whether the kind has a spec, so generation bumps on spec changes and the
	// status subresource updates only status.
	HasSpec bool
	// NoGeneration: the kind has a spec but, as in kube, no metadata.generation (Services,
	// PersistentVolumes, Nodes and others).
	NoGeneration bool
	// SpecField is the field whose changes bump generation when it is not Spec (a webhook
	// configuration's Webhooks).
	SpecField string
}

// Conversion converts a typed kind to the version it is stored in and back.
type Conversion struct {
	Stored     schema.GroupVersion
	NewStored  func() runtime.Object
	ToStored   func(obj runtime.Object) runtime.Object
	FromStored func(stored runtime.Object) runtime.Object
}

// StoredInVersion keeps a kind in another version of its group, as kube keeps some kinds in
// an earlier version for a release after a newer one was added, so that a downgrade reads
// them (its storage factory's overrides). The stored version has every field of the served
// one (it may have more, which a served object leaves empty), so an object is carried over
// field by field.
func StoredInVersion(stored schema.GroupVersion, newStored, newServed func() runtime.Object) *Conversion {
	carry := func(in runtime.Object, out runtime.Object) runtime.Object {
		data, err := json.Marshal(in)
		if err == nil {
			err = json.Unmarshal(data, out)
		}
		if err != nil {
			panic(fmt.Sprintf("carrying %T to %T: %v", in, out, err)) // same fields: cannot fail
		}
		return out
	}
	return &Conversion{Stored: stored, NewStored: newStored,
		ToStored:   func(o runtime.Object) runtime.Object { return carry(o, newStored()) },
		FromStored: func(o runtime.Object) runtime.Object { return carry(o, newServed()) },
	}
}

// specField is the field whose changes bump generation.
// Of is a New or NewList function: it returns a new, empty T.
func Of[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// SupportedFieldLabels is the field label conversion of most kinds that have one: the labels
// are taken as they are, any other is refused with kube's "field label not supported".
func SupportedFieldLabels(labels ...string) runtime.FieldLabelConversionFunc {
	return func(label, value string) (string, string, error) {
		if slices.Contains(labels, label) {
			return label, value, nil
		}
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
}

// NewReview is a create-only review API (TokenReview, SubjectAccessReview, ...).
func NewReview(gv schema.GroupVersion, name, kind string, namespaced bool, newObj func() runtime.Object) *Resource {
	return &Resource{GroupVersion: gv, Name: name, SingularName: strings.ToLower(kind), Kind: kind,
		Namespaced: namespaced, Review: true, New: newObj}
}

func (r *Resource) specField() string {
	if r.SpecField != "" {
		return r.SpecField
	}
	return "Spec"
}

// GroupVersionResource names the resource.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Name)
}

// GroupResource is used in error messages.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}
}

// Verbs are the verbs served on the resource.
func (r *Resource) Verbs() []string {
	if r.VerbsServed != nil {
		return r.VerbsServed
	}
	switch {
	case r.Review || r.Actions[""] != nil:
		return []string{"create"}
	case r.Computed != nil:
		return []string{"get", "list"}
	}
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// deprecation is kube's warning for a kind its type marks deprecated (k8s.io/api's
// APILifecycleDeprecated: "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1
// EndpointSlice"), or "".
func (r *Resource) deprecation() string {
	if r.New == nil {
		return ""
	}
	obj := r.New()
	d, ok := obj.(interface{ APILifecycleDeprecated() (int, int) })
	if !ok {
		return ""
	}
	major, minor := d.APILifecycleDeprecated()
	if major == 0 && minor == 0 {
		return ""
	}
	w := fmt.Sprintf("%s %s is deprecated in v%d.%d+", r.GroupVersion.String(), r.Kind, major, minor)
	if rm, ok := obj.(interface{ APILifecycleRemoved() (int, int) }); ok {
		if major, minor := rm.APILifecycleRemoved(); major != 0 || minor != 0 {
			w += fmt.Sprintf(", unavailable in v%d.%d+", major, minor)
		}
	}
	if rp, ok := obj.(interface {
		APILifecycleReplacement() schema.GroupVersionKind
	}); ok {
		if gvk := rp.APILifecycleReplacement(); !gvk.Empty() {
			w += fmt.Sprintf("; use %s %s", gvk.GroupVersion().String(), gvk.Kind)
		}
	}
	return w
}

// stored: the resource's objects live in storage (not a review, an action-only resource or a
// computed one).
func (r *Resource) stored() bool {
	return !r.Review && r.Actions[""] == nil && r.Computed == nil
}

func (r *Resource) hasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// Discovery describes the resource for the discovery service.
func (r *Resource) Discovery() *discoveryv1.Resource {
	subs := append([]string(nil), r.Subresources...)
	sort.Strings(subs)
	return &discoveryv1.Resource{Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
		Verbs: r.Verbs(), ShortNames: r.ShortNames, Categories: r.Categories, Subresources: subs}
}

// Set is the resources one backend serves, indexed by group/version/resource.
type Set struct {
	order []*Resource
	byGVR map[schema.GroupVersionResource]*Resource
	// prefixes are the stored resources' key prefixes (resourcePrefix) and the resource each
	// keeps there.
	prefixes map[string]schema.GroupResource
}

// NewSet indexes resources; discovery lists group/versions in the order first seen.
func NewSet(resources ...*Resource) *Set {
	s := &Set{byGVR: map[schema.GroupVersionResource]*Resource{}, prefixes: map[string]schema.GroupResource{}}
	for _, r := range resources {
		s.order = append(s.order, r)
		s.byGVR[r.GroupVersionResource()] = r
		if r.stored() {
			s.prefixes[resourcePrefix(r)] = r.StoredGroupResource()
		}
	}
	return s
}

// Lookup finds a resource.
func (s *Set) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := s.byGVR[gvr]
	return r, ok
}

// Served returns the discovery description, one entry per group/version in first-seen order.
func (s *Set) Served() []*discoveryv1.GroupVersion {
	var out []*discoveryv1.GroupVersion
	idx := map[schema.GroupVersion]*discoveryv1.GroupVersion{}
	for _, r := range s.order {
		gv, ok := idx[r.GroupVersion]
		if !ok {
			gv = &discoveryv1.GroupVersion{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version}
			idx[r.GroupVersion] = gv
			out = append(out, gv)
		}
		gv.Resources = append(gv.Resources, r.Discovery())
	}
	return out
}

// OpenAPIKinds describes the set's kinds for OpenAPI documents.
func (s *Set) OpenAPIKinds() []openapi.Kind {
	out := make([]openapi.Kind, 0, len(s.order))
	for _, r := range s.order {
		if r.isUnstructured() { // a custom resource's schema is its CRD's, not a Go type's
			continue
		}
		k := openapi.Kind{GroupVersion: r.GroupVersion, Kind: r.Kind, Resource: r.Name, Namespaced: r.Namespaced,
			Verbs: r.Verbs(), Subresources: r.Subresources, New: r.New, NewList: r.NewList}
		out = append(out, k)
	}
	return out
}

// OpenAPIV2 is the set's swagger 2.0 document, built anew by each call (a backend's OpenAPI
// documents, which keep it packed, and the admission policy status controller, for its type
// checker, each ask once).
func (s *Set) OpenAPIV2() ([]byte, error) { return openapi.V2(s.OpenAPIKinds()) }
