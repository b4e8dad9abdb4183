package storagemigration

import (
	"github.com/apichain/apichain/pkg/registry"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// storageVersionMigrations are storagemigration.k8s.io/v1 StorageVersionMigrations. apichain
// stores every object in the version it serves, so a migration has nothing to rewrite; the
// objects are kept for the tools that create them.
func storageVersionMigrations() *registry.Resource {
	return &registry.Resource{GroupVersion: storagemigrationv1.SchemeGroupVersion, Name: "storageversionmigrations", SingularName: "storageversionmigration",
		Kind: "StorageVersionMigration", Subresources: []string{"status"}, HasSpec: true, NoGeneration: true, NoAgeColumn: true,
		ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New:             registry.Of[storagemigrationv1.StorageVersionMigration](), NewList: registry.Of[storagemigrationv1.StorageVersionMigrationList](),
		Convert: registry.StoredInVersion(storagemigrationv1beta1.SchemeGroupVersion, registry.Of[storagemigrationv1beta1.StorageVersionMigration](),
			registry.Of[storagemigrationv1.StorageVersionMigration]()), // kube 1.37 stores v1beta1
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
