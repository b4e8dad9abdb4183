package registry

import (
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

// keyRoot is the prefix of every stored object's key, as in kube.
const keyRoot = "/registry/"

// key is the etcd key of an object: /registry/<group>/<resource>/[<namespace>/]<name>, with
// "core" for the legacy group.
func key(r *Resource, namespace, name string) string {
	k := prefix(r, namespace)
	return k + name
}

// prefix is the key prefix of a resource's objects, in one namespace when given.
func prefix(r *Resource, namespace string) string {
	k := resourcePrefix(r)
	if r.Namespaced && namespace != "" {
		k += namespace + "/"
	}
	return k
}

// resourcePrefix is the key prefix of all of a resource's objects: its group's, or the group's
// it is stored in (events.k8s.io's Events are core's).
func resourcePrefix(r *Resource) string {
	g := r.GroupVersion.Group
	if r.Convert != nil {
		g = r.Convert.Stored.Group
	}
	if g == "" {
		g = "core"
	}
	return keyRoot + g + "/" + r.Name + "/"
}

// resourcePrefixOf is the part of a key (or key prefix) that names its resource, as
// resourcePrefix makes it; "" for a key that names none.
func resourcePrefixOf(key string) string {
	rest, ok := strings.CutPrefix(key, keyRoot)
	if !ok {
		return ""
	}
	group, rest, ok := strings.Cut(rest, "/")
	if !ok || group == "" {
		return ""
	}
	resource, _, ok := strings.Cut(rest, "/")
	if !ok || resource == "" {
		return ""
	}
	return key[:len(keyRoot)+len(group)+1+len(resource)+1] // a part of key: no allocation on every storage call
}

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
// the version it was stored in, for ConvertVersion).
func decodeStoredForm(r *Resource, data []byte) (runtime.Object, error) {
	obj := r.New()
	if c := r.Convert; c != nil {
		obj = c.NewStored()
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", r.Name, err)
	}
	if c := r.Convert; c != nil {
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

// encodeStored is the stored form: JSON without resourceVersion (the revision is the version).
func (h *Handler) encodeStored(r *Resource, obj runtime.Object) ([]byte, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := acc.GetResourceVersion()
	acc.SetResourceVersion("")
	defer acc.SetResourceVersion(rv)
	if c := r.Convert; c != nil {
		stored := c.ToStored(obj)
		stored.GetObjectKind().SetGroupVersionKind(c.Stored.WithKind(r.Kind))
		return json.Marshal(stored)
	}
	if r.ConvertVersion != nil && !r.StoredAs.Empty() {
		stored, err := r.ConvertVersion(obj, r.StoredAs)
		if err != nil {
			return nil, err
		}
		return json.Marshal(stored)
	}
	gv := r.GroupVersion
	if !r.StoredAs.Empty() {
		gv = r.StoredAs
		defer obj.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(r.Kind))
	return json.Marshal(obj)
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
