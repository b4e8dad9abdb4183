package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/spans"
	"github.com/apichain/apichain/pkg/storage"
	"go.opentelemetry.io/otel/attribute"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// decodeBody reads a create/update body, strictly when fieldValidation=Strict.
// With fieldValidation Warn (the default) unknown and duplicate fields are dropped and
// reported as warnings; Strict rejects them; Ignore drops them silently.
func (h *Handler) decodeBody(ctx context.Context, r *Resource, body *resourcev1.Body, opts *resourcev1.WriteOptions, into runtime.Object) error {
	if len(body.GetData()) == 0 {
		return apierrors.NewBadRequest("the body of the request is empty")
	}
	fv := opts.GetFieldValidation()
	if err := validateFieldValidation(fv); err != nil {
		return err
	}
	gvk := r.GroupVersion.WithKind(r.Kind)
	if fv == "" || fv == "Warn" {
		probe := r.New()
		if err := h.scheme.decode(body.GetData(), body.GetContentType(), probe, gvk, true); err != nil {
			if warnings := strictWarnings(err); len(warnings) > 0 {
				AddWarnings(ctx, warnings...)
			}
		}
	}
	if err := h.scheme.decode(body.GetData(), body.GetContentType(), into, gvk, fv == "Strict"); err != nil {
		return err
	}
	warnings, err := unknownFields(r, into, fv)
	AddWarnings(ctx, warnings...)
	return err
}

// unknownFields applies fieldValidation to the fields a custom resource's schema does not
// know (which pruning drops), as kube does: Strict refuses them, Warn (the default) reports
// them, Ignore says nothing.
func unknownFields(r *Resource, obj runtime.Object, fieldValidation string) (warnings []string, err error) {
	if r.UnknownFields == nil || fieldValidation == "Ignore" {
		return nil, nil
	}
	paths := r.UnknownFields(obj)
	if len(paths) == 0 {
		return nil, nil
	}
	msgs := make([]string, len(paths))
	for i, p := range paths {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	if fieldValidation == "Strict" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			r.Kind, r.GroupVersion.Version, r.Kind, strings.Join(msgs, ", ")))
	}
	return msgs, nil
}

func validateFieldValidation(v string) error {
	switch v {
	case "", "Ignore", "Warn", "Strict":
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, got %q", v))
}

// Create makes an object.
func (h *Handler) Create(ctx context.Context, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "create")
	if err != nil {
		return nil, toGRPC(err)
	}
	if a := r.Actions[req.GetRef().GetSubresource()]; a != nil {
		resp, err := h.createAction(ctx, r, a, req)
		return resp, toGRPC(err)
	}
	obj := r.New()
	spans.Event(ctx, "About to convert to expected version")
	if err := h.decodeBody(ctx, r, req.GetBody(), req.GetOptions(), obj); err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "Conversion done")
	ctx = withManager(ctx, managerOrUserAgent(ctx, req.GetOptions().GetFieldManager()))
	spans.Event(ctx, "About to store object in database")
	created, err := h.create(ctx, r, req.GetRef().GetNamespace(), obj, isDryRun(req.GetOptions().GetDryRun()))
	writeEvent(ctx, err)
	if err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "About to write a response")
	body, err := h.respond(r, created, req.GetEncoding())
	if err != nil {
		return nil, toGRPC(err)
	}
	return &resourcev1.CreateResponse{Body: body, Code: http.StatusCreated}, nil
}

func (h *Handler) create(ctx context.Context, r *Resource, namespace string, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	sentRV := acc.GetResourceVersion()
	if r.Namespaced {
		if acc.GetNamespace() == "" {
			acc.SetNamespace(namespace)
		} else if acc.GetNamespace() != namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		if namespace == "" {
			return nil, apierrors.NewBadRequest("namespace is required for a namespaced resource")
		}
	} else {
		acc.SetNamespace("")
	}
	if r.Default != nil {
		r.Default(obj)
	}
	// Field ownership is what the client sent (and its defaults), as in kube, which tracks it
	// before admission: what admission adds (a service account, tolerations, a finalizer) is
	// owned by no manager, so a later apply does not take it away.
	if !isApplied(ctx) {
		obj = h.managers().track(r, "", r.New(), obj, managerFrom(ctx))
		if acc, err = meta.Accessor(obj); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	managed := acc.GetManagedFields()
	if obj, err = h.admit(ctx, h.attributes(ctx, r, admission.Create, "", obj, nil, acc.GetNamespace(), acc.GetName(), dryRun, nil)); err != nil {
		return nil, err
	}
	if acc, err = meta.Accessor(obj); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	h.prepareCreate(ctx, r, acc, obj)
	acc.SetManagedFields(managed)
	if r.AuthorizeWrite != nil {
		if err := r.AuthorizeWrite(ctx, obj, nil); err != nil {
			return nil, err
		}
	}
	written := false
	if r.Allocate != nil {
		undo, err := r.Allocate(ctx, obj, nil, dryRun)
		if err != nil {
			return nil, allocationError(r, acc.GetName(), err)
		}
		defer func() {
			if !written {
				undo()
			}
		}()
	}
	if errs := h.validateCreate(r, acc, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.GroupVersion.WithKind(r.Kind).GroupKind(), acc.GetName(), errs)
	}
	if err := h.validateAdmission(ctx, h.attributes(ctx, r, admission.Create, "", obj, nil, acc.GetNamespace(), acc.GetName(), dryRun, nil)); err != nil {
		return nil, err
	}
	if dryRun {
		acc.SetResourceVersion(sentRV) // kube's dry run neither reads nor clears it
		return obj, nil
	}
	// kube's storage refuses a set resourceVersion after validation and admission (its answer
	// is a 500; apichain's a 400, as for any bad request).
	if sentRV != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	data, err := h.encodeStored(r, obj)
	if err != nil {
		return nil, unknownError(err)
	}
	rev, err := h.store.Create(ctx, key(r, acc.GetNamespace(), acc.GetName()), data)
	if err != nil {
		return nil, storeError(err, r.GroupResource(), acc.GetName())
	}
	written = true
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return readBack(r, obj), nil
}

// allocationError is an Allocate error as the client sees it: field errors are the kind's 422.
func allocationError(r *Resource, name string, err error) error {
	var fe FieldErrors
	if errors.As(err, &fe) {
		return apierrors.NewInvalid(r.GroupVersion.WithKind(r.Kind).GroupKind(), name, field.ErrorList(fe))
	}
	return err
}

// FieldErrors are validation errors as an error value (what Allocate reports).
type FieldErrors field.ErrorList

func (e FieldErrors) Error() string { return field.ErrorList(e).ToAggregate().Error() }

// Update replaces an object (or its status or scale).
func (h *Handler) Update(ctx context.Context, req *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "update", "status", "scale", "finalize")
	if err != nil {
		return nil, toGRPC(err)
	}
	sub := req.GetRef().GetSubresource()
	var in runtime.Object
	if sub == "scale" {
		sc := &autoscalingv1.Scale{}
		if err := h.scheme.decode(req.GetBody().GetData(), req.GetBody().GetContentType(), sc, autoscalingv1.SchemeGroupVersion.WithKind("Scale"), false); err != nil {
			return nil, toGRPC(err)
		}
		in = sc
	} else {
		in = r.New()
		spans.Event(ctx, "About to convert to expected version")
		if err := h.decodeBody(ctx, r, req.GetBody(), req.GetOptions(), in); err != nil {
			return nil, toGRPC(err)
		}
		spans.Event(ctx, "Conversion done")
	}
	ctx = withManager(ctx, managerOrUserAgent(ctx, req.GetOptions().GetFieldManager()))
	spans.Event(ctx, "About to store object in database")
	out, err := h.update(ctx, r, req.GetRef(), isDryRun(req.GetOptions().GetDryRun()), func(current runtime.Object) (runtime.Object, error) {
		// A copy per attempt: merge and update set metadata on what this returns, and a
		// retried unconditional update must not see the last attempt's resourceVersion.
		return in.DeepCopyObject(), nil
	})
	writeEvent(ctx, err)
	if err != nil {
		return nil, toGRPC(err)
	}
	return h.writeResponse(ctx, r, sub, out, req.GetEncoding())
}

// writeEvent is kube's span event for a write's outcome.
func writeEvent(ctx context.Context, err error) {
	if err != nil {
		spans.Event(ctx, "Write to database call failed", attribute.String("err", err.Error()))
	} else {
		spans.Event(ctx, "Write to database call succeeded")
	}
}

func (h *Handler) writeResponse(ctx context.Context, r *Resource, sub string, obj runtime.Object, enc *resourcev1.Encoding) (*resourcev1.UpdateResponse, error) {
	spans.Event(ctx, "About to write a response")
	if sub == "scale" {
		sc, err := toScale(r, obj)
		if err != nil {
			return nil, toGRPC(err)
		}
		obj = sc
	}
	body, err := h.respond(r, obj, enc)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &resourcev1.UpdateResponse{Body: body, Code: http.StatusOK}, nil
}

// encodeUnlessOnlyTimes is next's stored form, unless next differs from current (stored as
// stored) only in its managed fields' times: then it is stored's, as kube ignores such a change
// (its IgnoreManagedFieldsTimestampsTransformer). A no-op apply of a field kube normalizes (a
// Secret's stringData, a quantity, a defaulted subject) bumps the applier's time and nothing else.
func (h *Handler) encodeUnlessOnlyTimes(r *Resource, next, current runtime.Object, stored []byte) ([]byte, error) {
	data, err := h.encodeStored(r, next)
	if err != nil || bytes.Equal(data, stored) {
		return data, err
	}
	nacc, err1 := meta.Accessor(next)
	cacc, err2 := meta.Accessor(current)
	if err1 != nil || err2 != nil {
		return data, nil
	}
	nm, cm := nacc.GetManagedFields(), cacc.GetManagedFields()
	if len(nm) != len(cm) || len(nm) == 0 {
		return data, nil
	}
	times := make([]*metav1.Time, len(nm))
	for i := range nm {
		a, b := nm[i], cm[i]
		times[i], a.Time, b.Time = nm[i].Time, nil, nil
		if !apiequality.Semantic.DeepEqual(a, b) {
			return data, nil
		}
	}
	for i := range nm {
		nm[i].Time = cm[i].Time
	}
	nacc.SetManagedFields(nm)
	if same, err := h.encodeStored(r, next); err == nil && bytes.Equal(same, stored) {
		return same, nil
	}
	for i := range nm {
		nm[i].Time = times[i]
	}
	nacc.SetManagedFields(nm)
	return data, nil
}

// objectState is the object an attempt of an update or a delete starts from.
type objectState struct {
	key string
	obj runtime.Object // the attempt's own copy
	rev int64
	// stored is the object's stored form, unencrypted (nil until storedForm for a cache's
	// copy); stale: etcd keeps it encrypted otherwise than it would be written now.
	stored []byte
	stale  bool
	// cached: the watch cache's copy, which may be behind etcd: only a write conditional on
	// its version confirms it.
	cached bool
}

// readState reads the object at ref from etcd, or from r's watch cache when fromCache and
// the cache is running and holds it.
func (h *Handler) readState(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, fromCache bool) (*objectState, error) {
	k := key(r, ref.GetNamespace(), ref.GetName())
	if fromCache {
		if obj, rev, ok := h.cachedObject(r, k); ok {
			return &objectState{key: k, obj: obj, rev: rev, cached: true}, nil
		}
	}
	kv, _, err := h.store.Get(ctx, k, 0)
	if err != nil {
		return nil, storeError(err, r.GroupResource(), ref.GetName())
	}
	obj, err := h.decodeStored(r, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, asStatus(err)
	}
	return &objectState{key: k, obj: obj, rev: kv.ModRevision, stored: kv.Value, stale: kv.Stale}, nil
}

// attempts runs try from the object at ref (the watch cache's copy, when fromCache and the
// cache holds one) until an attempt's outcome is the answer (try reports retry false). Every
// later attempt starts from etcd's object; an error decided on a cache's copy stands when etcd
// holds that copy's version, as kube's GuaranteedUpdate returns it when its cached object was
// current.
func (h *Handler) attempts(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, fromCache bool, try func(st *objectState, attempt int) (retry bool, err error)) error {
	st, err := h.readState(ctx, r, ref, fromCache)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		retry, err := try(st, attempt)
		if !retry {
			return err
		}
		cur, rerr := h.readState(ctx, r, ref, false)
		switch {
		case rerr != nil:
			return rerr
		case st.cached && err != nil && cur.rev == st.rev:
			return err
		}
		st = cur
	}
}

// storedForm is st's object as etcd keeps it, unencrypted: for a cache's copy, encoded again
// (as kube's getStateFromObject does for its cached object).
func (h *Handler) storedForm(r *Resource, st *objectState) ([]byte, error) {
	if st.stored == nil {
		data, err := h.encodeStored(r, st.obj)
		if err != nil {
			return nil, err
		}
		st.stored = data
	}
	return st.stored, nil
}

// update applies change to the current object and writes it with optimistic concurrency. A
// change whose result names no resourceVersion is retried on conflict (kube's unconditional
// update); one that names a stale version is a 409.
//
// As kube's GuaranteedUpdate starts from its watch cache's copy (cachedExistingObject), the
// first attempt starts from the cache's object when it has one: no read of etcd, and the write
// is conditional on that copy's version. What is decided on a copy that may be behind and is
// not a write etcd took is decided again on etcd's object (an error stands if etcd holds the
// copy's version). A dry run reads etcd, as kube's.
func (h *Handler) update(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, dryRun bool, change func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	var out runtime.Object
	err := h.attempts(ctx, r, ref, !dryRun, func(st *objectState, attempt int) (retry bool, err error) {
		out, retry, err = h.tryUpdate(ctx, r, ref, dryRun, change, st, attempt)
		return retry, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// tryUpdate is one attempt of update, from st. retry: the attempt's outcome is not the answer
// (a conflict to retry, or st is a cache's copy and no write confirmed it).
func (h *Handler) tryUpdate(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, dryRun bool, change func(current runtime.Object) (runtime.Object, error), st *objectState, attempt int) (runtime.Object, bool, error) {
	current := st.obj
	changed, err := change(current.DeepCopyObject())
	if err != nil {
		return nil, st.cached, err
	}
	if _, scale := changed.(*autoscalingv1.Scale); r.Default != nil && !scale {
		r.Default(changed)
	}
	if changed, err = h.admit(ctx, h.updateAttributes(ctx, r, ref, changed, current, dryRun)); err != nil {
		return nil, st.cached, err
	}
	next, requestedRV, err := h.merge(r, ref, current, changed)
	if err != nil {
		return nil, st.cached, err
	}
	switch sub := ref.GetSubresource(); {
	case isApplied(ctx) && sub == "status": // the apply's field ownership, with the status it set
		if cacc, err := meta.Accessor(changed); err == nil {
			nacc, _ := meta.Accessor(next)
			nacc.SetManagedFields(cacc.GetManagedFields())
		}
	case !isApplied(ctx) && (sub == "" || sub == "status"):
		next = h.managers().track(r, sub, current, next, managerFrom(ctx))
	case sub == "scale":
		if sc, ok := changed.(*autoscalingv1.Scale); ok {
			h.scaleOwnership(r, current, next, sc, managerFrom(ctx), isApplied(ctx))
		}
	}
	currentRV := strconv.FormatInt(st.rev, 10)
	if requestedRV != "" && requestedRV != currentRV {
		return nil, st.cached, storeError(storage.ErrConflict, r.GroupResource(), ref.GetName())
	}
	acc, _ := meta.Accessor(next)
	acc.SetResourceVersion(currentRV) // unconditional: the write is still conditional on it
	oldAcc, _ := meta.Accessor(current)
	if r.AuthorizeWrite != nil {
		if err := r.AuthorizeWrite(ctx, next, current); err != nil {
			return nil, st.cached, err
		}
	}
	undo := func() {}
	if r.Allocate != nil {
		if undo, err = r.Allocate(ctx, next, current, dryRun); err != nil {
			return nil, st.cached, allocationError(r, ref.GetName(), err)
		}
	}
	if errs := h.validateUpdate(r, acc, oldAcc, next, current); len(errs) > 0 {
		undo()
		return nil, st.cached, apierrors.NewInvalid(r.GroupVersion.WithKind(r.Kind).GroupKind(), ref.GetName(), errs)
	}
	if err := h.validateAdmission(ctx, h.updateAttributes(ctx, r, ref, next, current, dryRun)); err != nil {
		undo()
		return nil, st.cached, err
	}
	if dryRun {
		undo()
		return next, false, nil
	}
	// The last finalizer gone from an object being deleted: it goes away now, unless it
	// has grace left (a pod being deleted gracefully waits for its grace-0 delete).
	if acc.GetDeletionTimestamp() != nil && !pendingDeletion(r, next) && ptr.Deref(oldAcc.GetDeletionGracePeriodSeconds(), 0) == 0 {
		undo()
		obj, err := h.finalDelete(ctx, r, ref, next, st.rev)
		return obj, apierrors.IsConflict(err) && (st.cached || attempt < 10), err
	}
	stored, err := h.storedForm(r, st)
	if err != nil {
		undo()
		return nil, false, unknownError(err)
	}
	data, err := h.encodeUnlessOnlyTimes(r, next, current, stored)
	if err != nil {
		undo()
		return nil, false, unknownError(err)
	}
	// An update that changes nothing is not written, as in kube: the resourceVersion
	// stays, watchers see nothing, and kubectl reports "(no change)". Unless etcd keeps
	// it encrypted otherwise than it would be now: then it is written again, which is
	// how every Secret moves to a new key (kube's rotation: replace them all). (A cache's
	// copy cannot tell: etcd's is compared, as kube compares when it started from one.)
	if bytes.Equal(data, stored) && !st.stale {
		undo()
		return current, st.cached, nil
	}
	rev, err := h.store.Update(ctx, st.key, data, st.rev)
	if err != nil {
		undo()
	}
	if err == storage.ErrConflict && (st.cached || requestedRV == "" && attempt < 10) {
		return nil, true, err
	}
	if err != nil {
		return nil, false, storeError(err, r.GroupResource(), ref.GetName())
	}
	if r.Release != nil {
		r.Release(ctx, next, current)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return readBack(r, next), false, nil
}

// merge builds the object to store from the current one and the client's version: system
// fields are kept, the status subresource changes only status, the main resource keeps
// status, and generation bumps when the spec changed.
func (h *Handler) merge(r *Resource, ref *resourcev1.ResourceRef, current, changed runtime.Object) (runtime.Object, string, error) {
	if sc, ok := changed.(*autoscalingv1.Scale); ok {
		next := current.DeepCopyObject()
		if err := applyScale(r, next, sc); err != nil {
			return nil, "", apierrors.NewBadRequest(err.Error())
		}
		bumpGeneration(r, next, current)
		return next, sc.ResourceVersion, nil
	}
	acc, err := meta.Accessor(changed)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(err.Error())
	}
	if acc.GetName() != ref.GetName() {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), ref.GetName()))
	}
	if r.Namespaced && acc.GetNamespace() != "" && acc.GetNamespace() != ref.GetNamespace() {
		return nil, "", apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	requestedRV := acc.GetResourceVersion()
	oldAcc, _ := meta.Accessor(current)
	var next runtime.Object
	switch ref.GetSubresource() {
	case "status": // the status, and the metadata the kind lets a status write change
		next = current.DeepCopyObject()
		copyField(next, changed, "Status")
		nacc, _ := meta.Accessor(next)
		nacc.SetLabels(acc.GetLabels())
		nacc.SetAnnotations(acc.GetAnnotations())
		nacc.SetFinalizers(acc.GetFinalizers())
		nacc.SetOwnerReferences(acc.GetOwnerReferences())
		if r.ResetStatusMeta != nil {
			r.ResetStatusMeta(nacc, oldAcc)
		}
	case "finalize": // a namespace's spec.finalizers
		next = current.DeepCopyObject()
		copyField(next, changed, "Spec")
	case "":
		next = changed
		if r.hasSubresource("status") {
			copyField(next, current, "Status")
		}
	default:
		next = current.DeepCopyObject()
		r.Merges[ref.GetSubresource()](next, changed)
	}
	nacc, _ := meta.Accessor(next)
	if sub := ref.GetSubresource(); sub != "" && sub != "status" {
		// Other subresources change no labels or annotations; keep the current.
		nacc.SetLabels(oldAcc.GetLabels())
		nacc.SetAnnotations(oldAcc.GetAnnotations())
	}
	nacc.SetNamespace(oldAcc.GetNamespace())
	nacc.SetUID(oldAcc.GetUID())
	nacc.SetCreationTimestamp(oldAcc.GetCreationTimestamp())
	nacc.SetDeletionTimestamp(oldAcc.GetDeletionTimestamp())
	nacc.SetDeletionGracePeriodSeconds(oldAcc.GetDeletionGracePeriodSeconds())
	nacc.SetGeneration(oldAcc.GetGeneration())
	if nacc.GetManagedFields() == nil {
		nacc.SetManagedFields(oldAcc.GetManagedFields())
	}
	if nacc.GetGenerateName() == "" {
		nacc.SetGenerateName(oldAcc.GetGenerateName())
	}
	bumpGeneration(r, next, current)
	if sub := ref.GetSubresource(); (sub == "" || sub == "status") && r.PrepareForUpdate != nil {
		r.PrepareForUpdate(next, current)
	}
	return next, requestedRV, nil
}

func bumpGeneration(r *Resource, next, current runtime.Object) {
	if !r.HasSpec || r.NoGeneration {
		return
	}
	nacc, _ := meta.Accessor(next)
	oldAcc, _ := meta.Accessor(current)
	changed := !fieldEqual(next, current, r.specField())
	if !changed && nacc.GetDeletionTimestamp() != nil && oldAcc.GetDeletionTimestamp() == nil {
		changed = true
	}
	if changed {
		nacc.SetGeneration(oldAcc.GetGeneration() + 1)
	}
}

// Patch types kube accepts.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
	applyPatchType     = "application/apply-patch+yaml"
)

// Patch changes an object with a JSON, merge or strategic merge patch.
func (h *Handler) Patch(ctx context.Context, req *resourcev1.PatchRequest) (*resourcev1.PatchResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "patch", "status", "scale")
	if err != nil {
		return nil, toGRPC(err)
	}
	if err := validateFieldValidation(req.GetOptions().GetFieldValidation()); err != nil {
		return nil, toGRPC(err)
	}
	pt, _, err := mime.ParseMediaType(req.GetBody().GetContentType())
	if err != nil {
		pt = req.GetBody().GetContentType()
	}
	switch pt {
	case strategicPatchType:
		if r.isUnstructured() { // kube: custom resources have no patch strategies
			return nil, toGRPC(unsupportedMediaType(jsonPatchType, mergePatchType, applyPatchType))
		}
	case jsonPatchType, mergePatchType:
	case applyPatchType:
		resp, err := h.apply(ctx, r, req)
		return resp, toGRPC(err)
	default:
		return nil, toGRPC(unsupportedMediaType(jsonPatchType, mergePatchType, strategicPatchType, applyPatchType))
	}
	ctx = withManager(ctx, managerOrUserAgent(ctx, req.GetOptions().GetFieldManager()))
	patch := req.GetBody().GetData()
	if len(patch) == 0 {
		return nil, toGRPC(apierrors.NewBadRequest("the body of the request is empty"))
	}
	sub := req.GetRef().GetSubresource()
	strict := req.GetOptions().GetFieldValidation() == "Strict"
	warn := !strict && req.GetOptions().GetFieldValidation() != "Ignore" && sub != "scale"
	var warnings []string // of the last attempt: updates may retry
	out, err := h.update(ctx, r, req.GetRef(), isDryRun(req.GetOptions().GetDryRun()), func(current runtime.Object) (runtime.Object, error) {
		var target runtime.Object = current
		var gvkObj runtime.Object = r.New()
		if sub == "scale" {
			sc, err := toScale(r, current)
			if err != nil {
				return nil, err
			}
			target, gvkObj = sc, &autoscalingv1.Scale{}
		}
		original, err := json.Marshal(target)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		originalRV := ""
		if acc, err := meta.Accessor(target); err == nil {
			originalRV = acc.GetResourceVersion()
		}
		patched, err := applyPatch(pt, original, patch, gvkObj)
		if err != nil {
			return nil, err
		}
		into := gvkObj.DeepCopyObject()
		if err := h.decodePatched(r, sub, patched, into, strict); err != nil {
			// kube's words: the patched object (the patch itself, for a strategic merge patch)
			// is an invalid value of "patch"
			value := string(patched)
			var m map[string]any
			if pt == strategicPatchType && json.Unmarshal(patch, &m) == nil {
				value = fmt.Sprintf("%v", m)
			}
			return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, err.Error())})
		}
		if warn { // fieldValidation Warn: what a strict decode would reject becomes warnings
			warnings = strictWarnings(h.scheme.decode(patched, MediaJSON, r.New(), r.GroupVersion.WithKind(r.Kind), true))
		}
		if sub != "scale" {
			unknown, err := unknownFields(r, into, req.GetOptions().GetFieldValidation())
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, unknown...)
		}
		// A patch that does not set resourceVersion is unconditional; one that changes it (a
		// JSON patch replacing /metadata/resourceVersion too) makes it a precondition, as kube.
		if acc, err := meta.Accessor(into); err == nil && !patchSetsRV(patch) && acc.GetResourceVersion() == originalRV {
			acc.SetResourceVersion("")
		}
		return into, nil
	})
	if err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "Object stored in database")
	AddWarnings(ctx, warnings...)
	resp, err := h.writeResponse(ctx, r, sub, out, req.GetEncoding())
	if err != nil {
		return nil, err
	}
	return &resourcev1.PatchResponse{Body: resp.GetBody(), Code: resp.GetCode()}, nil
}

// decodePatched reads a patched object into into: a typed kind as kube's codec reads it
// (strictly, naming an unknown field by its path, with fieldValidation=Strict), a scale or a
// custom resource (whose unknown fields are its schema's to report) as JSON.
func (h *Handler) decodePatched(r *Resource, sub string, patched []byte, into runtime.Object, strict bool) error {
	if sub != "scale" && !r.isUnstructured() {
		err := h.scheme.decode(patched, MediaJSON, into, r.GroupVersion.WithKind(r.Kind), strict)
		var de *decodeError
		if errors.As(err, &de) {
			return de.cause
		}
		return err
	}
	if strict {
		if err := yaml.UnmarshalStrict(patched, into); err != nil {
			return fmt.Errorf("strict decoding error: %w", err)
		}
		return nil
	}
	return json.Unmarshal(patched, into)
}

// patchSetsRV reports whether a merge-style patch names metadata.resourceVersion (kube then
// enforces it as a precondition).
func patchSetsRV(patch []byte) bool {
	var m struct {
		Metadata struct {
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(patch, &m) == nil && m.Metadata.ResourceVersion != nil
}

func applyPatch(pt string, original, patch []byte, dataStruct runtime.Object) (_ []byte, err error) {
	// The patch libraries panic on some malformed patches (json-patch: a root "replace"
	// without a value). That is the client's error; it must not take the server down.
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprintf("the patch could not be applied: %v", p)
			if pt == jsonPatchType {
				err = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", metav1GR, "", msg, 0, false)
			} else {
				err = apierrors.NewBadRequest(msg)
			}
		}
	}()
	switch pt {
	case jsonPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		out, err := p.Apply(original)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", metav1GR, "", err.Error(), 0, false)
		}
		return out, nil
	case mergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("error decoding patch: invalid JSON")
		}
		out, err := jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	default:
		var pm map[string]any
		if err := json.Unmarshal(patch, &pm); err != nil {
			return nil, apierrors.NewBadRequest("error decoding patch: " + err.Error())
		}
		out, err := strategicpatch.StrategicMergePatch(original, patch, dataStruct)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	}
}

var metav1GR = metav1.SchemeGroupVersion.WithResource("").GroupResource()

// maxJSONPatchOperations is kube's limit on the operations of one JSON patch.
const maxJSONPatchOperations = 10000

func init() {
	// kube's JSONPatchMaxCopyBytes (3 MiB), armed the way kube-apiserver arms it when it builds
	// its server: without it a few "copy" operations grow an object exponentially.
	jsonpatch.AccumulatedCopySizeLimit = 3 << 20
}
