package core

import (
	"context"
	"reflect"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	accessModes   = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}
	reclaimPolicy = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}
	volumeModes   = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
)

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path, required string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		switch {
		case !sets.New(accessModes...).Has(m):
			errs = append(errs, field.NotSupported(p, m, accessModes))
		case m == corev1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// persistentVolumes are v1 PersistentVolumes.
func persistentVolumes() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "persistentvolumes", SingularName: "persistentvolume",
		Kind: "PersistentVolume", ShortNames: []string{"pv"}, Subresources: []string{"status"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[corev1.PersistentVolume](), NewList: registry.Of[corev1.PersistentVolumeList](),
		PrepareForCreate: func(_ context.Context, o runtime.Object) {
			o.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending,
				LastPhaseTransitionTime: now()}
		},
		Validate: func(o runtime.Object) field.ErrorList {
			s := &o.(*corev1.PersistentVolume).Spec
			p := field.NewPath("spec")
			errs := validateAccessModes(s.AccessModes, p.Child("accessModes"), "")
			if len(s.Capacity) == 0 {
				errs = append(errs, field.Required(p.Child("capacity"), ""))
			}
			if _, ok := s.Capacity[corev1.ResourceStorage]; !ok || len(s.Capacity) > 1 {
				errs = append(errs, field.NotSupported(p.Child("capacity"), s.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
			}
			for _, name := range validate.SortedResourceNames(s.Capacity) {
				if q := s.Capacity[name]; q.Sign() <= 0 {
					errs = append(errs, field.Invalid(p.Child("capacity").Key(string(name)), q.String(), "must be greater than zero"))
				}
			}
			if rp := s.PersistentVolumeReclaimPolicy; rp != "" && !sets.New(reclaimPolicy...).Has(rp) {
				errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), rp, reclaimPolicy))
			}
			errs = append(errs, onePVSource(&s.PersistentVolumeSource, p)...)
			if s.StorageClassName != "" {
				errs = append(errs, validate.InvalidEach(p.Child("storageClassName"), s.StorageClassName, apivalidation.NameIsDNSSubdomain(s.StorageClassName, false))...)
			}
			if m := s.VolumeMode; m != nil && !sets.New(volumeModes...).Has(*m) {
				errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, volumeModes))
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			s, prev := o.(*corev1.PersistentVolume).Spec, old.(*corev1.PersistentVolume).Spec
			if !apiequality.Semantic.DeepEqual(s.PersistentVolumeSource, prev.PersistentVolumeSource) {
				return field.ErrorList{field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is forbidden once a volume has been created")}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
			registry.Column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
			registry.Column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
			registry.Column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
			registry.Column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
			registry.Column("StorageClass", "string", "StorageClass of the pv"),
			registry.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
			registry.Column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
			registry.AgeColumn,
			registry.Wide(registry.Column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
		},
		Cells: func(o runtime.Object) []any {
			pv := o.(*corev1.PersistentVolume)
			claim := ""
			if r := pv.Spec.ClaimRef; r != nil {
				claim = r.Namespace + "/" + r.Name
			}
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			size := pv.Spec.Capacity[corev1.ResourceStorage]
			class := pv.Spec.StorageClassName
			if class == "" {
				class = pv.Annotations[corev1.BetaStorageClassAnnotation]
			}
			return []any{size.String(), accessModesText(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy), phase, claim,
				class, unset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, registry.AgeCell(o), unset((*string)(pv.Spec.VolumeMode))}
		},
	}
}

// pvSources are a persistent volume's source fields in the order kube checks them.
var pvSources = []string{"HostPath", "GCEPersistentDisk", "AWSElasticBlockStore", "Glusterfs", "Flocker", "NFS", "RBD", "Quobyte", "CephFS",
	"ISCSI", "Cinder", "FC", "FlexVolume", "AzureFile", "VsphereVolume", "PhotonPersistentDisk", "PortworxVolume", "AzureDisk", "ScaleIO",
	"Local", "StorageOS", "CSI"}

func onePVSource(s *corev1.PersistentVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(s).Elem()
	found := 0
	for _, name := range pvSources {
		if v.FieldByName(name).IsNil() {
			continue
		}
		if found > 0 {
			sf, _ := v.Type().FieldByName(name)
			errs = append(errs, field.Forbidden(p.Child(strings.Split(sf.Tag.Get("json"), ",")[0]), "may not specify more than 1 volume type"))
		}
		found++
	}
	if found == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

// accessModesText is kubectl's short form: RWO,ROX,RWX,RWOP.
func accessModesText(modes []corev1.PersistentVolumeAccessMode) string {
	has := sets.New(modes...)
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has.Has(m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func unset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

// persistentVolumeClaims are v1 PersistentVolumeClaims.
func persistentVolumeClaims() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "persistentvolumeclaims", SingularName: "persistentvolumeclaim",
		Kind: "PersistentVolumeClaim", Namespaced: true, ShortNames: []string{"pvc"}, Subresources: []string{"status"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[corev1.PersistentVolumeClaim](), NewList: registry.Of[corev1.PersistentVolumeClaimList](),
		PrepareForCreate: func(_ context.Context, o runtime.Object) {
			o.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		Validate: func(o runtime.Object) field.ErrorList {
			return validatePVCSpec(&o.(*corev1.PersistentVolumeClaim).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			s, prev := o.(*corev1.PersistentVolumeClaim).Spec, old.(*corev1.PersistentVolumeClaim).Spec
			// Only the storage request (expansion) and the volume attributes class may change, and
			// a volume name be set once.
			if prev.VolumeName == "" {
				prev.VolumeName = s.VolumeName
			}
			prev.Resources.Requests, prev.VolumeAttributesClassName = s.Resources.Requests, s.VolumeAttributesClassName
			if !apiequality.Semantic.DeepEqual(s, prev) {
				return field.ErrorList{field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
			registry.Column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
			registry.Column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
			registry.Column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
			registry.Column("StorageClass", "string", "StorageClass of the pvc"),
			registry.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
			registry.AgeColumn,
			registry.Wide(registry.Column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
		},
		Cells: func(o runtime.Object) []any {
			pvc := o.(*corev1.PersistentVolumeClaim)
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			capacity, modes := "", ""
			if pvc.Spec.VolumeName != "" {
				modes = accessModesText(pvc.Status.AccessModes)
				q := pvc.Status.Capacity[corev1.ResourceStorage]
				capacity = q.String()
			}
			class := pvc.Annotations[corev1.BetaStorageClassAnnotation]
			if class == "" && pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			return []any{phase, pvc.Spec.VolumeName, capacity, modes, class, unset(pvc.Spec.VolumeAttributesClassName),
				registry.AgeCell(o), unset((*string)(pvc.Spec.VolumeMode))}
		},
	}
}

func validatePVCSpec(s *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	if s.Selector != nil {
		errs = append(errs, validate.LabelSelector(s.Selector, p.Child("selector"))...)
	}
	if len(s.AccessModes) > 0 {
		errs = append(errs, validateAccessModes(s.AccessModes, p.Child("accessModes"), "")...)
	}
	sp := p.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(sp, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(sp, q.String(), "must be greater than zero"))
	}
	if c := s.StorageClassName; c != nil && *c != "" {
		errs = append(errs, validate.InvalidEach(p.Child("storageClassName"), *c, apivalidation.NameIsDNSSubdomain(*c, false))...)
	}
	if m := s.VolumeMode; m != nil && !sets.New(volumeModes...).Has(*m) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, volumeModes))
	}
	return errs
}

// now is the current time as kube stores it, to the second.
func now() *metav1.Time {
	t := metav1.Now().Rfc3339Copy()
	return &t
}
