package core

import (
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// podTemplates are v1 PodTemplates.
func podTemplates() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "podtemplates", SingularName: "podtemplate", Kind: "PodTemplate",
		Namespaced: true, NoAgeColumn: true, HasSpec: true, SpecField: "Template",
		New: registry.Of[corev1.PodTemplate](), NewList: registry.Of[corev1.PodTemplateList](),
		Validate: func(o runtime.Object) field.ErrorList {
			return validate.PodTemplate(&o.(*corev1.PodTemplate).Template, field.NewPath("template"))
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Containers", "string", "Names of each container in the template."),
			registry.Column("Images", "string", "Images referenced by each container in the template."),
			registry.Column("Pod Labels", "string", "The labels for the pod template."),
		},
		Cells: func(o runtime.Object) []any {
			t := o.(*corev1.PodTemplate).Template
			names, images := ContainerCells(t.Spec.Containers)
			return []any{names, images, labels.FormatLabels(t.Labels)}
		},
	}
}

// replicationControllers are v1 ReplicationControllers, with the scale subresource.
func replicationControllers() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "replicationcontrollers", SingularName: "replicationcontroller",
		Kind: "ReplicationController", Namespaced: true, ShortNames: []string{"rc"}, Categories: []string{"all"},
		Subresources: []string{"scale", "status"}, HasSpec: true,
		New: registry.Of[corev1.ReplicationController](), NewList: registry.Of[corev1.ReplicationControllerList](),
		FieldLabels: replicationControllerFields, FieldLabelConversion: replicationControllerFieldLabels,
		Validate: func(o runtime.Object) field.ErrorList {
			s := &o.(*corev1.ReplicationController).Spec
			p := field.NewPath("spec")
			var errs field.ErrorList
			validate.NonNegative(&errs, p.Child("replicas"), int64(ptr.Deref(s.Replicas, 0)))
			validate.NonNegative(&errs, p.Child("minReadySeconds"), int64(s.MinReadySeconds))
			sel := labels.Set(s.Selector).AsSelector()
			if sel.Empty() {
				errs = append(errs, field.Required(p.Child("selector"), ""))
			}
			tp := p.Child("template")
			if s.Template == nil {
				return append(errs, field.Required(tp, ""))
			}
			if !sel.Empty() && !sel.Matches(labels.Set(s.Template.Labels)) {
				errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
			}
			errs = append(errs, validate.PodTemplate(s.Template, tp)...)
			if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
				errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), s.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
			registry.Column("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
			registry.Column("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
			registry.AgeColumn,
			registry.Wide(registry.Column("Containers", "string", "Names of each container in the template.")),
			registry.Wide(registry.Column("Images", "string", "Images referenced by each container in the template.")),
			registry.Wide(registry.Column("Selector", "string", corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])),
		},
		Cells: func(o runtime.Object) []any {
			rc := o.(*corev1.ReplicationController)
			var cs []corev1.Container
			if rc.Spec.Template != nil {
				cs = rc.Spec.Template.Spec.Containers
			}
			names, images := ContainerCells(cs)
			return []any{int64(ptr.Deref(rc.Spec.Replicas, 0)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), registry.AgeCell(o),
				names, images, labels.FormatLabels(rc.Spec.Selector)}
		},
	}
}
