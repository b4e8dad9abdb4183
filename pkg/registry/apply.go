package registry

import (
	"context"
	"fmt"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// apply is server-side apply (application/apply-patch+yaml): the field manager merges the
// applied configuration into the live object, recording who owns which fields, and refuses
// to take fields another manager owns unless force is set (409 with the conflicts). Applying
// to a missing object creates it.
func (h *Handler) apply(ctx context.Context, r *Resource, req *resourcev1.PatchRequest) (*resourcev1.PatchResponse, error) {
	ref := req.GetRef()
	sub := ref.GetSubresource()
	if sub != "" && sub != "status" && sub != "scale" {
		return nil, apierrors.NewBadRequest("server-side apply to subresources is not supported yet")
	}
	manager := req.GetOptions().GetFieldManager()
	if manager == "" {
		return nil, apierrors.NewInvalid(patchOptionsGK, "", field.ErrorList{field.Required(field.NewPath("fieldManager"), "is required for apply patch")})
	}
	fms := h.managers()
	gvk := r.GroupVersion.WithKind(r.Kind)
	if sub == "scale" {
		gvk = scaleGVK
	}
	applied, err := decodeApplyPatch(gvk, r.Namespaced, ref, req.GetBody().GetData())
	if err != nil {
		return nil, err
	}
	var fm *managedfields.FieldManager
	if sub == "scale" {
		fm, err = fms.scale()
	} else {
		fm, err = fms.get(r, sub)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	force, dryRun := req.GetForce(), isDryRun(req.GetOptions().GetDryRun())
	ctx = withApplied(withManager(ctx, manager))
	out, err := h.update(ctx, r, ref, dryRun, func(current runtime.Object) (runtime.Object, error) {
		if sub == "scale" {
			return applyToScale(r, fm, current, applied, manager, force)
		}
		obj, err := fm.Apply(current, applied, manager, force)
		if err != nil {
			return nil, applyError(err)
		}
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetResourceVersion("") // apply is unconditional unless the patch names a version
			if v := applied.GetResourceVersion(); v != "" {
				acc.SetResourceVersion(v)
			}
		}
		return obj, nil
	})
	code := int32(http.StatusOK)
	if apierrors.IsNotFound(err) && sub == "" {
		live := r.New()
		live.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind))
		acc, _ := meta.Accessor(live)
		acc.SetName(ref.GetName())
		acc.SetNamespace(ref.GetNamespace())
		obj, aerr := fm.Apply(live, applied, manager, force)
		if aerr != nil {
			return nil, applyError(aerr)
		}
		out, err = h.create(ctx, r, ref.GetNamespace(), obj, dryRun)
		code = http.StatusCreated
	}
	if err != nil {
		return nil, err
	}
	if sub == "scale" {
		if out, err = toScale(r, out); err != nil {
			return nil, err
		}
	}
	body, err := h.respond(r, out, req.GetEncoding())
	if err != nil {
		return nil, err
	}
	return &resourcev1.PatchResponse{Body: body, Code: code}, nil
}

// applyToScale applies a Scale to current's scale, as kube's scale subresources do: the owners
// of current's replicas are the live Scale's, and the result's owners go back to current
// (update's scaleOwnership).
func applyToScale(r *Resource, fm *managedfields.FieldManager, current runtime.Object, applied *unstructured.Unstructured, manager string, force bool) (runtime.Object, error) {
	live, _, err := liveScale(r, current)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, err := fm.Apply(live, applied, manager, force)
	if err != nil {
		return nil, applyError(err)
	}
	sc := &autoscalingv1.Scale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, sc); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	sc.ResourceVersion = applied.GetResourceVersion() // unconditional unless the patch names a version
	return sc, nil
}

var patchOptionsGK = schema.GroupKind{Group: "meta.k8s.io", Kind: "PatchOptions"}

// decodeApplyPatch decodes an apply patch of a gvk object, checked against the request's
// names.
func decodeApplyPatch(gvk schema.GroupVersionKind, namespaced bool, ref *resourcev1.ResourceRef, data []byte) (*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, apierrors.NewBadRequest("the body of the request is empty")
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, apierrors.NewBadRequest("error decoding YAML: " + err.Error())
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, apierrors.NewBadRequest("error decoding apply patch: " + err.Error())
	}
	if u.GetAPIVersion() != gvk.GroupVersion().String() || u.GetKind() != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", schema.FromAPIVersionAndKind(u.GetAPIVersion(), u.GetKind()))) // kube's field manager's words
	}
	if u.GetName() != "" && u.GetName() != ref.GetName() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", u.GetName(), ref.GetName()))
	}
	if u.GetNamespace() != "" && namespaced && u.GetNamespace() != ref.GetNamespace() {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if u.GetManagedFields() != nil {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	return u, nil
}

// applyError keeps the field manager's conflict Status (409) and reports anything else as
// the client's fault, as kube does for patches it cannot apply.
func applyError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}
