package apps

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// controllerRevisions are apps/v1 ControllerRevisions with kube's validation (data is
// mandatory, a JSON object, and immutable) and columns.
func controllerRevisions() *registry.Resource {
	return &registry.Resource{GroupVersion: appsv1.SchemeGroupVersion, Name: "controllerrevisions", SingularName: "controllerrevision",
		Kind: "ControllerRevision", Namespaced: true,
		New: registry.Of[appsv1.ControllerRevision](), NewList: registry.Of[appsv1.ControllerRevisionList](),
		Validate: func(o runtime.Object) field.ErrorList {
			cr := o.(*appsv1.ControllerRevision)
			errs := validateRevision(cr)
			var v any
			switch {
			case cr.Data.Raw == nil:
				errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
			case json.Unmarshal(cr.Data.Raw, &v) != nil:
				errs = append(errs, field.Invalid(field.NewPath("data"), "<value omitted>", fmt.Sprintf("error parsing data: %v", json.Unmarshal(cr.Data.Raw, &v))))
			case v == nil:
				errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
			default:
				if _, ok := v.(map[string]any); !ok {
					errs = append(errs, field.Required(field.NewPath("data"), "data must be a valid JSON object"))
				}
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			cr, prev := o.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
			errs := validateRevision(cr)
			if !apiequality.Semantic.DeepEqual(cr.Data.Raw, prev.Data.Raw) {
				errs = append(errs, field.Invalid(field.NewPath("data"), cr.Data, validate.FieldImmutableErrorMsg))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Controller", "string", "Controller of the object"),
			registry.Column("Revision", "string", "Revision is the revision number"),
		},
		Cells: func(o runtime.Object) []any {
			cr := o.(*appsv1.ControllerRevision)
			controller := "<none>"
			if ref := metav1.GetControllerOf(cr); ref != nil {
				if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
					controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
				}
			}
			return []any{controller, cr.Revision}
		},
	}
}

func validateRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	if cr.Revision < 0 {
		return field.ErrorList{field.Invalid(field.NewPath("revision"), cr.Revision, "must be greater than or equal to 0")}
	}
	return nil
}
