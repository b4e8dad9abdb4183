package builtin

import (
	"context"
	"reflect"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
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
		New: obj[corev1.PersistentVolume](), NewList: obj[corev1.PersistentVolumeList](),
		PrepareForCreate: func(_ context.Context, o runtime.Object) {
			o.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending,
				LastPhaseTransitionTime: ptrNow()}
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
			for _, name := range sortedResourceNames(s.Capacity) {
				if q := s.Capacity[name]; q.Sign() <= 0 {
					errs = append(errs, field.Invalid(p.Child("capacity").Key(string(name)), q.String(), "must be greater than zero"))
				}
			}
			if rp := s.PersistentVolumeReclaimPolicy; rp != "" && !sets.New(reclaimPolicy...).Has(rp) {
				errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), rp, reclaimPolicy))
			}
			errs = append(errs, onePVSource(&s.PersistentVolumeSource, p)...)
			if s.StorageClassName != "" {
				errs = append(errs, invalidEach(p.Child("storageClassName"), s.StorageClassName, apivalidation.NameIsDNSSubdomain(s.StorageClassName, false))...)
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
			col("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
			col("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
			col("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
			col("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
			col("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
			col("StorageClass", "string", "StorageClass of the pv"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
			col("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
			registry.AgeColumn,
			wide(col("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
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
		New: obj[corev1.PersistentVolumeClaim](), NewList: obj[corev1.PersistentVolumeClaimList](),
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
			col("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
			col("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
			col("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
			col("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
			col("StorageClass", "string", "StorageClass of the pvc"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
			registry.AgeColumn,
			wide(col("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
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
		errs = append(errs, validateLabelSelector(s.Selector, p.Child("selector"))...)
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
		errs = append(errs, invalidEach(p.Child("storageClassName"), *c, apivalidation.NameIsDNSSubdomain(*c, false))...)
	}
	if m := s.VolumeMode; m != nil && !sets.New(volumeModes...).Has(*m) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, volumeModes))
	}
	return errs
}

// csiNodes are storage.k8s.io/v1 CSINodes (one per node, written by the kubelet).
func csiNodes() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "csinodes", SingularName: "csinode", Kind: "CSINode",
		Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, New: obj[storagev1.CSINode](), NewList: obj[storagev1.CSINodeList](),
		Validate: func(o runtime.Object) field.ErrorList {
			var errs field.ErrorList
			p := field.NewPath("spec", "drivers")
			seen := sets.New[string]()
			for i, d := range o.(*storagev1.CSINode).Spec.Drivers {
				dp := p.Index(i)
				errs = append(errs, validateProvisioner(d.Name, dp.Child("name"))...)
				if seen.Has(d.Name) {
					errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
				}
				seen.Insert(d.Name)
				if d.NodeID == "" {
					errs = append(errs, field.Required(dp.Child("nodeID"), ""))
				}
				if d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count < 0 {
					errs = append(errs, field.Invalid(dp.Child("allocatable", "count"), *d.Allocatable.Count, "must be greater than or equal to 0"))
				}
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node")},
		Cells:   func(o runtime.Object) []any { return []any{int64(len(o.(*storagev1.CSINode).Spec.Drivers))} },
	}
}

// volumeAttachments are storage.k8s.io/v1 VolumeAttachments.
func volumeAttachments() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "volumeattachments", SingularName: "volumeattachment",
		Kind: "VolumeAttachment", Subresources: []string{"status"}, HasSpec: true, NoGeneration: true,
		New: obj[storagev1.VolumeAttachment](), NewList: obj[storagev1.VolumeAttachmentList](),
		Validate: func(o runtime.Object) field.ErrorList {
			s := o.(*storagev1.VolumeAttachment).Spec
			p := field.NewPath("spec")
			errs := validateProvisioner(s.Attacher, p.Child("attacher"))
			sp := p.Child("source")
			switch n := boolInt(s.Source.PersistentVolumeName != nil) + boolInt(s.Source.InlineVolumeSpec != nil); {
			case n == 0:
				errs = append(errs, field.Required(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
			case n > 1:
				errs = append(errs, field.Forbidden(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
			case s.Source.PersistentVolumeName != nil && *s.Source.PersistentVolumeName == "":
				errs = append(errs, field.Required(sp.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
			}
			if s.NodeName == "" {
				errs = append(errs, field.Required(p.Child("nodeName"), ""))
			} else {
				errs = append(errs, invalidEach(p.Child("nodeName"), s.NodeName, apivalidation.NameIsDNSSubdomain(s.NodeName, false))...)
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*storagev1.VolumeAttachment).Spec, old.(*storagev1.VolumeAttachment).Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), o.(*storagev1.VolumeAttachment).Spec, "field is immutable")}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
			col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
			col("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
			col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
		},
		Cells: func(o runtime.Object) []any {
			va := o.(*storagev1.VolumeAttachment)
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = *va.Spec.Source.PersistentVolumeName
			}
			return []any{va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached}
		},
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// storageVersionMigrations are storagemigration.k8s.io/v1 StorageVersionMigrations. apichain
// stores every object in the version it serves, so a migration has nothing to rewrite; the
// objects are kept for the tools that create them.
func storageVersionMigrations() *registry.Resource {
	return &registry.Resource{GroupVersion: storagemigrationv1.SchemeGroupVersion, Name: "storageversionmigrations", SingularName: "storageversionmigration",
		Kind: "StorageVersionMigration", Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, NoAgeColumn: true,
		New: obj[storagemigrationv1.StorageVersionMigration](), NewList: obj[storagemigrationv1.StorageVersionMigrationList](),
		Validate: func(o runtime.Object) field.ErrorList {
			r := o.(*storagemigrationv1.StorageVersionMigration).Spec.Resource
			p := field.NewPath("spec", "resource")
			if r.Resource == "" {
				return field.ErrorList{field.Required(p.Child("resource"), "")}
			}
			return nil
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*storagemigrationv1.StorageVersionMigration).Spec, old.(*storagemigrationv1.StorageVersionMigration).Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), o.(*storagemigrationv1.StorageVersionMigration).Spec, "field is immutable")}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Resource", Type: "string", Description: "GroupResource to migrate"},
			{Name: "Status", Type: "string", Description: "Status of the migration"},
		},
		Cells: func(o runtime.Object) []any {
			m := o.(*storagemigrationv1.StorageVersionMigration)
			status := "Unknown"
			for _, c := range m.Status.Conditions {
				if c.Status == metav1.ConditionTrue && (c.Type == "Running" || c.Type == "Failed" || c.Type == "Succeeded") {
					status = c.Type
				}
			}
			return []any{m.Spec.Resource.String(), status}
		},
	}
}

func ptrNow() *metav1.Time {
	t := metav1.Now().Rfc3339Copy()
	return &t
}
