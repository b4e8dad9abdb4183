package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/spans"
	"github.com/apichain/apichain/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// deleteOptions reads the optional DeleteOptions body (JSON, YAML or protobuf) and merges
// the query's options into it (the body wins, as in kube); dryRun is either's dryRun=All.
func (h *Handler) deleteOptions(r *Resource, body *resourcev1.Body, query *resourcev1.DeleteOptions) (opts *metav1.DeleteOptions, dryRun bool, err error) {
	opts = &metav1.DeleteOptions{}
	mt, _, _ := mime.ParseMediaType(body.GetContentType())
	switch {
	case len(body.GetData()) == 0:
	case mt == "" || mt == MediaJSON || mt == MediaYAML:
		// As kube's: kind DeleteOptions of any apiVersion (client-go's dynamic and metadata
		// clients send "v1", typed clients their group's; a custom resource's is unknown to
		// the scheme), as JSON or YAML, with kube's words for what is not.
		data, err := yaml.YAMLToJSON(body.GetData())
		if err == nil {
			err = json.Unmarshal(data, opts)
		}
		if err != nil {
			return nil, false, apierrors.NewBadRequest(err.Error())
		}
		if opts.Kind != "" && opts.Kind != "DeleteOptions" {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf(`no kind %q is registered for version %q in scheme "pkg/runtime/scheme.go:111"`, opts.Kind, opts.APIVersion))
		}
	default:
		if err := h.scheme.decode(body.GetData(), body.GetContentType(), opts, r.GroupVersion.WithKind("DeleteOptions"), false); err != nil {
			return nil, false, apierrors.NewBadRequest("invalid DeleteOptions: " + err.Error())
		}
	}
	if p := query.GetPropagationPolicy(); p != "" && opts.PropagationPolicy == nil {
		policy := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &policy
	}
	return opts, isDryRun(query.GetDryRun()) || isDryRun(opts.DryRun), validatePropagation(opts)
}

// pendingDeletion reports whether deleting obj must wait (finalizers, or a kind's own rule
// such as a namespace's spec.finalizers).
func pendingDeletion(r *Resource, obj runtime.Object) bool {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return len(acc.GetFinalizers()) > 0 || (r.PendingDeletion != nil && r.PendingDeletion(obj))
}

// Delete removes an object, or marks it for deletion while finalizers remain.
func (h *Handler) Delete(ctx context.Context, req *resourcev1.DeleteRequest) (*resourcev1.DeleteResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "delete")
	if err != nil {
		return nil, toGRPC(err)
	}
	opts, dryRun, err := h.deleteOptions(r, req.GetBody(), req.GetOptions())
	if err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "About to delete object from database")
	obj, deleted, err := h.delete(ctx, r, req.GetRef(), opts, dryRun)
	if err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "Object deleted from database")
	spans.Event(ctx, "About to write a response")
	body, err := h.respond(r, obj, req.GetEncoding())
	if err != nil {
		return nil, toGRPC(err)
	}
	// kube answers 200 even when deletion waits on finalizers, except 202 when the client
	// asked for cascading deletion with orphanDependents=false (kept for old clients).
	code := int32(http.StatusOK)
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	return &resourcev1.DeleteResponse{Body: body, Code: code}, nil
}

// delete deletes the object at ref, or marks it for deletion. As update, the first attempt
// starts from the watch cache's copy when there is one (kube's delete reads etcd, then deletes
// conditionally on its cache's copy: here the copy saves the read too); whatever is decided on
// it and is not a write etcd took is decided again on etcd's object.
func (h *Handler) delete(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, opts *metav1.DeleteOptions, dryRun bool) (runtime.Object, bool, error) {
	// The options are this object's: a graceful deletion fills in its grace period (kube's
	// DeleteCollection copies them for each object too).
	opts = opts.DeepCopy()
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if r.ValidateDelete != nil {
		if err := r.ValidateDelete(ref.GetName()); err != nil {
			return nil, false, err
		}
	}
	// As kube: mutating admission of a delete sees no object, validating admission the
	// current one.
	if _, err := h.admit(ctx, h.attributes(ctx, r, admission.Delete, "", nil, nil, ref.GetNamespace(), ref.GetName(), dryRun, opts)); err != nil {
		return nil, false, err
	}
	var obj runtime.Object
	var deleted bool
	err := h.attempts(ctx, r, ref, !dryRun, func(st *objectState, attempt int) (retry bool, err error) {
		obj, deleted, retry, err = h.tryDelete(ctx, r, ref, opts, dryRun, st, attempt)
		return retry, err
	})
	if err != nil {
		return nil, false, err
	}
	return obj, deleted, nil
}

// tryDelete is one attempt of delete, from st; retry as tryUpdate's (see attempts).
func (h *Handler) tryDelete(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, opts *metav1.DeleteOptions, dryRun bool, st *objectState, attempt int) (obj runtime.Object, deleted, retry bool, err error) {
	current := st.obj
	acc, _ := meta.Accessor(current)
	if pre := opts.Preconditions; pre != nil {
		if pre.UID != nil && *pre.UID != acc.GetUID() {
			return nil, false, st.cached, apierrors.NewConflict(r.GroupResource(), ref.GetName(),
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, acc.GetUID()))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != acc.GetResourceVersion() {
			return nil, false, st.cached, apierrors.NewConflict(r.GroupResource(), ref.GetName(),
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, acc.GetResourceVersion()))
		}
	}
	if err := h.validateAdmission(ctx, h.attributes(ctx, r, admission.Delete, "", nil, current.DeepCopyObject(), ref.GetNamespace(), ref.GetName(), dryRun, opts)); err != nil {
		return nil, false, st.cached, err
	}
	graceful, alreadyGraceful := h.beforeDelete(r, current, acc, opts)
	if alreadyGraceful {
		return current, false, st.cached, nil // kube: the deletion under way goes on as it was
	}
	// Orphan and Foreground propagation hold the owner with a finalizer the garbage
	// collector removes once the dependents are orphaned or gone (kube's semantics).
	if f := propagationFinalizer(opts); f != "" && acc.GetDeletionTimestamp() == nil && !hasString(acc.GetFinalizers(), f) {
		acc.SetFinalizers(append(acc.GetFinalizers(), f))
	}
	pending := pendingDeletion(r, current)
	if dryRun {
		return current, !pending && ptr.Deref(acc.GetDeletionGracePeriodSeconds(), 0) == 0, false, nil
	}
	var write bool
	switch {
	case graceful: // marked by beforeDelete
		write = true
	case pending && acc.GetDeletionTimestamp() != nil:
		return current, false, st.cached, nil // already being deleted
	case pending:
		now := metav1.NewTime(h.now())
		zero := int64(0)
		acc.SetDeletionTimestamp(&now)
		acc.SetDeletionGracePeriodSeconds(&zero)
		if r.OnDeletionStart != nil {
			r.OnDeletionStart(current)
		}
		if r.HasSpec && !r.NoGeneration { // kube bumps generation when deletion starts
			acc.SetGeneration(acc.GetGeneration() + 1)
		}
		write = true
	}
	rev := st.rev
	if write {
		data, err := h.encodeStored(r, current)
		if err != nil {
			return nil, false, false, unknownError(err)
		}
		rev, err = h.store.Update(ctx, st.key, data, st.rev)
		if err == storage.ErrConflict && (st.cached || attempt < 10) {
			return nil, false, true, err
		}
		if err != nil {
			return nil, false, false, storeError(err, r.GroupResource(), ref.GetName())
		}
		acc.SetResourceVersion(strconv.FormatInt(rev, 10))
		// As kube: a graceful deletion with no grace left (a pod that never ran) is
		// written marked, then deleted, so watchers see both.
		if pending || ptr.Deref(acc.GetDeletionGracePeriodSeconds(), 0) > 0 {
			return current, false, false, nil
		}
	}
	obj, err = h.finalDelete(ctx, r, ref, current, rev)
	if apierrors.IsConflict(err) && (st.cached || attempt < 10) {
		return nil, false, true, err
	}
	return obj, err == nil, false, err
}

// beforeDelete is kube's rest.BeforeDelete for r's graceful deletion: for an object not yet
// marked it sets deletionTimestamp (now + grace) and deletionGracePeriodSeconds from
// r.GracefulDelete and reports graceful; for one marked with grace left, a shorter grace
// period moves its deletionTimestamp earlier (graceful), and any other delete leaves it
// (alreadyGraceful). Negative grace periods count as 1 s.
func (h *Handler) beforeDelete(r *Resource, obj runtime.Object, acc metav1.Object, opts *metav1.DeleteOptions) (graceful, alreadyGraceful bool) {
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		opts.GracePeriodSeconds = ptr.To[int64](1)
	}
	if g := acc.GetDeletionGracePeriodSeconds(); g != nil && *g < 0 {
		acc.SetDeletionGracePeriodSeconds(ptr.To[int64](1))
	}
	if r.GracefulDelete == nil {
		return false, false
	}
	if ts := acc.GetDeletionTimestamp(); ts != nil {
		current := acc.GetDeletionGracePeriodSeconds()
		if current == nil || *current == 0 {
			return false, false // marked for its finalizers only: delete as any object
		}
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *current {
			return false, true
		}
		period := *opts.GracePeriodSeconds
		when := metav1.NewTime(ts.Add(time.Duration(period-*current) * time.Second))
		if now := metav1.NewTime(h.now()); when.Before(&now) {
			when = now
			if period != 0 {
				period = 1
			}
		}
		acc.SetDeletionTimestamp(&when)
		acc.SetDeletionGracePeriodSeconds(&period)
		return true, false
	}
	if !r.GracefulDelete(obj, opts) || opts.GracePeriodSeconds == nil {
		return false, false
	}
	when := metav1.NewTime(h.now().Add(time.Duration(*opts.GracePeriodSeconds) * time.Second))
	acc.SetDeletionTimestamp(&when)
	acc.SetDeletionGracePeriodSeconds(ptr.To(*opts.GracePeriodSeconds))
	if acc.GetGeneration() > 0 {
		acc.SetGeneration(acc.GetGeneration() + 1)
	}
	return true, false
}

// finalDelete removes obj's key if it is still at rev.
func (h *Handler) finalDelete(ctx context.Context, r *Resource, ref *resourcev1.ResourceRef, obj runtime.Object, rev int64) (runtime.Object, error) {
	// A conflict (the object changed since it was read) is a 409 the callers retry a few
	// times before giving it to the client.
	newRev, err := h.store.Delete(ctx, key(r, ref.GetNamespace(), ref.GetName()), rev)
	if err != nil {
		return nil, storeError(err, r.GroupResource(), ref.GetName())
	}
	if r.Release != nil {
		r.Release(ctx, nil, obj)
	}
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetResourceVersion(strconv.FormatInt(newRev, 10))
	}
	return obj, nil
}

// DeleteCollection deletes every object matching the selectors.
func (h *Handler) DeleteCollection(ctx context.Context, req *resourcev1.DeleteCollectionRequest) (*resourcev1.DeleteCollectionResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "deletecollection")
	if err != nil {
		return nil, toGRPC(err)
	}
	opts, dryRun, err := h.deleteOptions(r, req.GetBody(), req.GetOptions())
	if err != nil {
		return nil, toGRPC(err)
	}
	res, err := h.list(ctx, r, req.GetRef().GetNamespace(), req.GetListOptions(), 0, "")
	if err != nil {
		return nil, toGRPC(err)
	}
	var deleted []runtime.Object
	for _, item := range res.items {
		acc, _ := meta.Accessor(item)
		obj, _, err := h.delete(ctx, r, objectRef(r, acc.GetNamespace(), acc.GetName()), opts, dryRun)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, toGRPC(err)
		}
		deleted = append(deleted, obj)
	}
	list := r.NewList()
	if err := meta.SetList(list, deleted); err != nil {
		return nil, toGRPC(apierrors.NewInternalError(err))
	}
	if lacc, err := meta.ListAccessor(list); err == nil {
		lacc.SetResourceVersion(strconv.FormatInt(res.revision, 10))
	}
	list.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind + "List"))
	body, err := h.respond(r, list, req.GetEncoding())
	if err != nil {
		return nil, toGRPC(err)
	}
	return &resourcev1.DeleteCollectionResponse{Body: body}, nil
}

func validatePropagation(opts *metav1.DeleteOptions) error {
	if opts.PropagationPolicy == nil {
		return nil
	}
	switch *opts.PropagationPolicy {
	case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q", *opts.PropagationPolicy))
}

// propagationFinalizer is the finalizer a delete with this propagation adds to the owner.
func propagationFinalizer(opts *metav1.DeleteOptions) string {
	switch {
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan,
		opts.PropagationPolicy == nil && opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.FinalizerOrphanDependents
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground:
		return metav1.FinalizerDeleteDependents
	}
	return ""
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
