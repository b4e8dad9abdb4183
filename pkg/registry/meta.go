package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decodeStored reads a stored object and sets its resourceVersion to the etcd revision.
func (h *Handler) decodeStored(r *Resource, data []byte, rev int64) (runtime.Object, error) {
	obj, err := decodeStoredForm(r, data)
	if err != nil {
		return nil, err
	}
	if r.ConvertVersion != nil {
		if obj, err = r.ConvertVersion(obj, r.GroupVersion); err != nil {
			return nil, err
		}
	}
	return finishStored(r, obj, rev)
}

// decodeStoredForm decodes a stored object into the resource's type (a custom resource keeps
// the version it was stored in, for ConvertVersion). Protobuf or JSON, whatever the media
// type objects are now written in, and in the resource's own version or the one it is stored
// as: kube's storage reads both encodings, and an earlier apichain wrote some kinds in their
// served version.
func decodeStoredForm(r *Resource, data []byte) (runtime.Object, error) {
	c := r.Convert
	if bytes.HasPrefix(data, protobufPrefix) {
		obj, conv, err := unmarshalProtobuf(r, data)
		if err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", r.Name, err)
		}
		if conv {
			obj = c.FromStored(obj)
		}
		return obj, nil
	}
	data, err := storedJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", r.Name, err)
	}
	obj := r.New()
	if c != nil {
		obj = c.NewStored()
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", r.Name, err)
	}
	if c != nil {
		if obj.GetObjectKind().GroupVersionKind().GroupVersion() == r.GroupVersion && c.Stored != r.GroupVersion {
			obj = r.New() // written in its served version
			if err := json.Unmarshal(data, obj); err != nil {
				return nil, fmt.Errorf("decoding stored %s: %w", r.Name, err)
			}
			return obj, nil
		}
		obj = c.FromStored(obj)
	}
	return obj, nil
}

// finishStored makes a decoded stored object the resource's: its defaults (kube defaults what
// it reads from etcd too: a job's labels come from its template), its kind and version, and
// the revision as its resourceVersion.
func finishStored(r *Resource, obj runtime.Object, rev int64) (runtime.Object, error) {
	if r.Default != nil {
		r.Default(obj)
	}
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind))
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// encodeStored is the stored form, in the resource's storage version and the handler's
// storage media type, without resourceVersion (the revision is the version), as kube's.
func (h *Handler) encodeStored(r *Resource, obj runtime.Object) ([]byte, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := acc.GetResourceVersion()
	acc.SetResourceVersion("")
	defer acc.SetResourceVersion(rv)
	media := h.storageMedia
	if r.StorageMediaType != "" {
		media = r.StorageMediaType
	}
	if c := r.Convert; c != nil {
		return marshalStored(c.ToStored(obj), c.Stored.WithKind(r.Kind), media)
	}
	if r.ConvertVersion != nil && !r.StoredAs.Empty() {
		stored, err := r.ConvertVersion(obj, r.StoredAs)
		if err != nil {
			return nil, err
		}
		return marshalStored(stored, stored.GetObjectKind().GroupVersionKind(), media)
	}
	gv := r.GroupVersion
	if !r.StoredAs.Empty() {
		gv = r.StoredAs
		defer obj.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind))
	}
	return marshalStored(obj, gv.WithKind(r.Kind), media)
}

// readBack is what a write returns: the object as a read of the stored one gives it (a
// converted kind's response is what its stored form converts back to, as kube's is).
func readBack(r *Resource, obj runtime.Object) runtime.Object {
	c := r.Convert
	if c == nil {
		return obj
	}
	out := c.FromStored(c.ToStored(obj))
	if acc, err := meta.Accessor(obj); err == nil {
		if oacc, err := meta.Accessor(out); err == nil {
			oacc.SetResourceVersion(acc.GetResourceVersion())
		}
	}
	out.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind))
	return out
}

const nameChars = "bcdfghjklmnpqrstvwxz2456789"

// generateName appends five random characters, as kube's names.SimpleNameGenerator does.
// GenerateName is base followed by five random characters, as kube names generated objects.
func GenerateName(base string) string {
	const maxLen = 63 - 5
	if len(base) > maxLen {
		base = base[:maxLen]
	}
	b := make([]byte, 5)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(nameChars))))
		b[i] = nameChars[n.Int64()]
	}
	return base + string(b)
}

// prepareCreate sets the system fields of a new object.
func (h *Handler) prepareCreate(ctx context.Context, r *Resource, acc metav1.Object, obj runtime.Object) {
	if acc.GetName() == "" && acc.GetGenerateName() != "" {
		acc.SetName(GenerateName(acc.GetGenerateName()))
	}
	acc.SetUID(types.UID(uuid.NewString()))
	acc.SetCreationTimestamp(metav1.NewTime(h.now().Truncate(time.Second)))
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	acc.SetManagedFields(nil)
	acc.SetSelfLink("")
	if r.HasSpec && !r.NoGeneration {
		acc.SetGeneration(1)
	} else {
		acc.SetGeneration(0)
	}
	if r.hasSubresource("status") {
		resetField(obj, "Status")
	}
	if r.PrepareForCreate != nil {
		r.PrepareForCreate(ctx, obj)
	}
}

// resetField zeroes a top-level struct field by name (the status a client may not set on create).
func resetField(obj runtime.Object, name string) {
	if m, key, ok := unstructuredField(obj, name); ok {
		delete(m, key)
		return
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName(name)
	if f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyField copies a top-level struct field by name from src to dst.
func copyField(dst, src runtime.Object, name string) {
	if d, key, ok := unstructuredField(dst, name); ok {
		if s, _, ok := unstructuredField(src, name); ok {
			if v, found := s[key]; found {
				d[key] = runtime.DeepCopyJSONValue(v)
			} else {
				delete(d, key)
			}
		}
		return
	}
	d := reflect.ValueOf(dst).Elem().FieldByName(name)
	s := reflect.ValueOf(src).Elem().FieldByName(name)
	if d.IsValid() && s.IsValid() && d.CanSet() {
		d.Set(s)
	}
}

// fieldEqual compares a top-level field of two objects semantically.
func fieldEqual(a, b runtime.Object, name string) bool {
	if ma, key, ok := unstructuredField(a, name); ok {
		if mb, _, ok := unstructuredField(b, name); ok {
			return equality.Semantic.DeepEqual(ma[key], mb[key])
		}
	}
	fa := reflect.ValueOf(a).Elem().FieldByName(name)
	fb := reflect.ValueOf(b).Elem().FieldByName(name)
	if !fa.IsValid() || !fb.IsValid() {
		return true
	}
	return equality.Semantic.DeepEqual(fa.Interface(), fb.Interface())
}

// validateCreate runs kube's object-meta rules and the kind's own.
func (h *Handler) validateCreate(r *Resource, acc metav1.Object, obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	if !r.ValidatesMeta {
		errs = apivalidation.ValidateObjectMetaAccessor(acc, r.Namespaced, nameValidator(r), field.NewPath("metadata"))
	}
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if r.ValidateCreate != nil {
		errs = append(errs, r.ValidateCreate(obj)...)
	}
	return errs
}

func (h *Handler) validateUpdate(r *Resource, acc, oldAcc metav1.Object, obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	if !r.ValidatesMeta {
		errs = apivalidation.ValidateObjectMetaAccessorUpdate(acc, oldAcc, field.NewPath("metadata"))
		errs = append(errs, apivalidation.ValidateObjectMetaAccessor(acc, r.Namespaced, nameValidator(r), field.NewPath("metadata"))...)
	}
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if r.ValidateUpdate != nil {
		errs = append(errs, r.ValidateUpdate(obj, old)...)
	}
	return errs
}

// nameValidator is the kind's, or kube's default: a DNS subdomain.
func nameValidator(r *Resource) apivalidation.ValidateNameFunc {
	if r.ValidateName != nil {
		return r.ValidateName
	}
	return apivalidation.NameIsDNSSubdomain
}

// isDryRun reports dryRun=All.
func isDryRun(dryRun []string) bool {
	for _, d := range dryRun {
		if strings.EqualFold(d, "All") {
			return true
		}
	}
	return false
}
