package storage

import (
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const defaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// storageClasses are storage.k8s.io/v1 StorageClasses with kube's defaults (reclaimPolicy
// Delete, volumeBindingMode Immediate), validation, immutable fields and columns (the default
// class marked " (default)").
func storageClasses() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "storageclasses", SingularName: "storageclass", Kind: "StorageClass",
		ShortNames: []string{"sc"}, New: registry.Of[storagev1.StorageClass](), NewList: registry.Of[storagev1.StorageClassList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateStorageClass(o.(*storagev1.StorageClass)) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			sc, prev := o.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
			var errs field.ErrorList
			// kube's declarative validation reports these without a value.
			for _, f := range []struct {
				name        string
				now, wanted any
			}{{"parameters", sc.Parameters, prev.Parameters}, {"provisioner", sc.Provisioner, prev.Provisioner},
				{"reclaimPolicy", sc.ReclaimPolicy, prev.ReclaimPolicy}, {"volumeBindingMode", sc.VolumeBindingMode, prev.VolumeBindingMode}} {
				if !apiequality.Semantic.DeepEqual(f.now, f.wanted) {
					errs = append(errs, field.Invalid(field.NewPath(f.name), nil, validate.FieldImmutableErrorMsg))
				}
			}
			return errs
		},
		NameCell: registry.MarkedDefault(defaultStorageClassAnnotation),
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Provisioner", "string", "Indicates the type of the provisioner."),
			registry.Column("ReclaimPolicy", "string", "Indicates the type of the reclaim policy."),
			registry.Column("VolumeBindingMode", "string", "Indicates how PersistentVolumeClaims should be bound."),
			registry.Column("AllowVolumeExpansion", "string", "Indicates whether the storage class allow volume expand."),
		},
		Cells: func(o runtime.Object) []any {
			sc := o.(*storagev1.StorageClass)
			reclaim, binding := "Delete", "Immediate"
			if sc.ReclaimPolicy != nil {
				reclaim = string(*sc.ReclaimPolicy)
			}
			if sc.VolumeBindingMode != nil {
				binding = string(*sc.VolumeBindingMode)
			}
			return []any{sc.Provisioner, reclaim, binding, ptr.Deref(sc.AllowVolumeExpansion, false)}
		},
	}
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validate.Provisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, validateClassParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != corev1.PersistentVolumeReclaimDelete && *p != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, []string{"Delete", "Retain"}))
	}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, []string{"Immediate", "WaitForFirstConsumer"}))
	}
	var seen []map[string]sets.Set[string]
	for i, term := range sc.AllowedTopologies {
		p := field.NewPath("allowedTopologies").Index(i)
		exprs := map[string]sets.Set[string]{}
		for j, req := range term.MatchLabelExpressions {
			q := p.Child("matchLabelExpressions").Index(j)
			values := sets.New[string]()
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(q.Child("values"), ""))
			}
			for k, v := range req.Values {
				if values.Has(v) {
					errs = append(errs, field.Duplicate(q.Child("values").Index(k), v))
				}
				values.Insert(v)
			}
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, q.Child("key"))...)
			if _, dup := exprs[req.Key]; dup {
				errs = append(errs, field.Duplicate(q.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, prev := range seen {
			if apiequality.Semantic.DeepEqual(exprs, prev) {
				errs = append(errs, field.Duplicate(p.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

var fsGroupPolicies = sets.New(string(storagev1.NoneFSGroupPolicy), string(storagev1.FileFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy))

// csiDrivers are storage.k8s.io/v1 CSIDrivers with kube's defaults, validation, immutable
// fields and columns.
func csiDrivers() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "csidrivers", SingularName: "csidriver", Kind: "CSIDriver",
		HasSpec: true, NoGeneration: true, New: registry.Of[storagev1.CSIDriver](), NewList: registry.Of[storagev1.CSIDriverList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateCSIDriverSpec(&o.(*storagev1.CSIDriver).Spec) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			s, prev := &o.(*storagev1.CSIDriver).Spec, &old.(*storagev1.CSIDriver).Spec
			errs := validateCSIDriverSpec(s)
			if !apiequality.Semantic.DeepEqual(s.AttachRequired, prev.AttachRequired) { // kube's path has the typo
				errs = append(errs, field.Invalid(field.NewPath("spec", "attachedRequired"), ptr.Deref(s.AttachRequired, false), validate.FieldImmutableErrorMsg))
			}
			if !apiequality.Semantic.DeepEqual(s.VolumeLifecycleModes, prev.VolumeLifecycleModes) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "volumeLifecycleModes"), s.VolumeLifecycleModes, validate.FieldImmutableErrorMsg))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("AttachRequired", "boolean", "Indicates this CSI volume driver requires an attach operation, and that Kubernetes should call attach and wait for any attach operation to complete before proceeding to mounting."),
			registry.Column("PodInfoOnMount", "boolean", "Indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations."),
			registry.Column("StorageCapacity", "boolean", "Indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information."),
			registry.Column("TokenRequests", "string", "Indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication."),
			registry.Column("RequiresRepublish", "boolean", "Indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume."),
			registry.Column("Modes", "string", "Defines what kind of volumes this CSI volume driver supports."),
		},
		Cells: func(o runtime.Object) []any {
			s := o.(*storagev1.CSIDriver).Spec
			var modes []string
			for _, m := range s.VolumeLifecycleModes {
				modes = append(modes, string(m))
			}
			mode := strings.Join(modes, ",")
			if mode == "" {
				mode = "<none>"
			}
			tokens := "<unset>"
			if s.TokenRequests != nil {
				var auds []string
				for _, t := range s.TokenRequests {
					auds = append(auds, t.Audience)
				}
				tokens = strings.Join(auds, ",")
			}
			return []any{ptr.Deref(s.AttachRequired, true), ptr.Deref(s.PodInfoOnMount, false), ptr.Deref(s.StorageCapacity, false),
				tokens, ptr.Deref(s.RequiresRepublish, false), mode}
		},
	}
}

// validateCSIDriverSpec is kube's validateCSIDriverSpec.
func validateCSIDriverSpec(s *storagev1.CSIDriverSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	for _, f := range []struct {
		name string
		v    *bool
	}{{"attachedRequired", s.AttachRequired}, {"podInfoOnMount", s.PodInfoOnMount}, {"storageCapacity", s.StorageCapacity}} {
		if f.v == nil {
			errs = append(errs, field.Required(p.Child(f.name), ""))
		}
	}
	if g := s.FSGroupPolicy; g != nil && !fsGroupPolicies.Has(string(*g)) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), g, sets.List(fsGroupPolicies)))
	}
	audiences := sets.New[string]()
	for i, t := range s.TokenRequests {
		q := p.Child("tokenRequests").Index(i)
		if audiences.Has(t.Audience) {
			errs = append(errs, field.Duplicate(q.Child("audience"), t.Audience))
			continue
		}
		audiences.Insert(t.Audience)
		if e := t.ExpirationSeconds; e != nil {
			if *e < 600 {
				errs = append(errs, field.Invalid(q.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			}
			if *e > 1<<32 {
				errs = append(errs, field.Invalid(q.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, []string{"Persistent", "Ephemeral"}))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(p.Child("seLinuxMount"), ""))
	}
	if n := s.NodeAllocatableUpdatePeriodSeconds; n != nil && *n < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *n, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	if s.PreventPodSchedulingIfMissing == nil {
		errs = append(errs, field.Required(p.Child("preventPodSchedulingIfMissing"), ""))
	}
	return errs
}

// validateClassParameters is kube's validation of a class's parameters: at most 512, keys not
// empty, 256 KiB in all, and (unless allowEmpty) at least one.
func validateClassParameters(params map[string]string, allowEmpty bool, p *field.Path) field.ErrorList {
	if len(params) > 512 {
		return field.ErrorList{field.TooLong(p, "", 512)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > 256<<10 {
		errs = append(errs, field.TooLong(p, "", 256<<10))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(p, "must contain at least one key/value pair"))
	}
	return errs
}

// volumeAttributesClasses are storage.k8s.io/v1 VolumeAttributesClasses with kube's
// validation (driverName and parameters may not change) and columns.
func volumeAttributesClasses() *registry.Resource {
	validate := func(c *storagev1.VolumeAttributesClass) field.ErrorList {
		return append(validate.Provisioner(c.DriverName, field.NewPath("driverName")),
			validateClassParameters(c.Parameters, false, field.NewPath("parameters"))...)
	}
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "volumeattributesclasses", SingularName: "volumeattributesclass",
		Kind: "VolumeAttributesClass", ShortNames: []string{"vac"},
		New: registry.Of[storagev1.VolumeAttributesClass](), NewList: registry.Of[storagev1.VolumeAttributesClassList](),
		Validate: func(o runtime.Object) field.ErrorList { return validate(o.(*storagev1.VolumeAttributesClass)) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			c, prev := o.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
			var errs field.ErrorList
			if c.DriverName != prev.DriverName {
				errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
			}
			if !apiequality.Semantic.DeepEqual(c.Parameters, prev.Parameters) {
				errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
			}
			return append(errs, validate(c)...)
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("DriverName", "string", "Name of the CSI driver that handles this VolumeAttributesClass")},
		Cells:   func(o runtime.Object) []any { return []any{o.(*storagev1.VolumeAttributesClass).DriverName} },
	}
}

// csiStorageCapacities are storage.k8s.io/v1 CSIStorageCapacities with kube's validation
// (storageClassName and nodeTopology may not change) and columns.
func csiStorageCapacities() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "csistoragecapacities", SingularName: "csistoragecapacity",
		Kind: "CSIStorageCapacity", Namespaced: true,
		New: registry.Of[storagev1.CSIStorageCapacity](), NewList: registry.Of[storagev1.CSIStorageCapacityList](),
		Validate: func(o runtime.Object) field.ErrorList {
			c := o.(*storagev1.CSIStorageCapacity)
			errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
			errs = append(errs, validate.InvalidEach(field.NewPath("storageClassName"), c.StorageClassName, validation.IsDNS1123Subdomain(c.StorageClassName))...)
			if q := c.Capacity; q != nil && q.Cmp(resource.Quantity{}) < 0 {
				errs = append(errs, field.Invalid(field.NewPath("capacity"), q.String(), "must be greater than or equal to 0"))
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			c, prev := o.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
			var errs field.ErrorList
			if !apiequality.Semantic.DeepEqual(c.NodeTopology, prev.NodeTopology) {
				errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, validate.FieldImmutableErrorMsg))
			}
			if c.StorageClassName != prev.StorageClassName {
				errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, validate.FieldImmutableErrorMsg))
			}
			return errs
		},
		Columns: registry.CreatedAtColumns, Cells: registry.CreatedAtCells,
	}
}
