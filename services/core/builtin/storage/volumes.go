package storage

import (
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// csiNodes are storage.k8s.io/v1 CSINodes (one per node, written by the kubelet).
func csiNodes() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "csinodes", SingularName: "csinode", Kind: "CSINode",
		Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, New: registry.Of[storagev1.CSINode](), NewList: registry.Of[storagev1.CSINodeList](),
		Validate: func(o runtime.Object) field.ErrorList {
			var errs field.ErrorList
			p := field.NewPath("spec", "drivers")
			seen := sets.New[string]()
			for i, d := range o.(*storagev1.CSINode).Spec.Drivers {
				dp := p.Index(i)
				errs = append(errs, validate.Provisioner(d.Name, dp.Child("name"))...)
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
		Columns: []metav1.TableColumnDefinition{registry.Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node")},
		Cells:   func(o runtime.Object) []any { return []any{int64(len(o.(*storagev1.CSINode).Spec.Drivers))} },
	}
}

// volumeAttachments are storage.k8s.io/v1 VolumeAttachments.
func volumeAttachments() *registry.Resource {
	return &registry.Resource{GroupVersion: storagev1.SchemeGroupVersion, Name: "volumeattachments", SingularName: "volumeattachment",
		Kind: "VolumeAttachment", Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New: registry.Of[storagev1.VolumeAttachment](), NewList: registry.Of[storagev1.VolumeAttachmentList](),
		Validate: func(o runtime.Object) field.ErrorList {
			s := o.(*storagev1.VolumeAttachment).Spec
			p := field.NewPath("spec")
			errs := validate.Provisioner(s.Attacher, p.Child("attacher"))
			sp := p.Child("source")
			switch n := validate.BoolInt(s.Source.PersistentVolumeName != nil) + validate.BoolInt(s.Source.InlineVolumeSpec != nil); {
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
				errs = append(errs, validate.InvalidEach(p.Child("nodeName"), s.NodeName, apivalidation.NameIsDNSSubdomain(s.NodeName, false))...)
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
			registry.Column("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
			registry.Column("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
			registry.Column("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
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
