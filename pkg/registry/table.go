package registry

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// AgeColumn lets a kind place Age among its columns; Cells then returns AgeCell(obj) there.
var AgeColumn = ageColumn

// Column is a kubectl column of a kind's table.
func Column(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

// Wide makes a column one that kubectl shows only with -o wide.
func Wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

// CreatedAtColumns are the table of kinds kube prints with their creation time only (roles,
// limit ranges, ...); CreatedAtCells are their cells.
var CreatedAtColumns = []metav1.TableColumnDefinition{Column("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])}

// CreatedAtCells are the cells of CreatedAtColumns.
func CreatedAtCells(o runtime.Object) []any {
	acc := o.(metav1.Object)
	return []any{acc.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// MarkedDefault is the Name cell of a class kind: " (default)" after the name of the class
// whose annotation says it is the default, as kube prints it.
func MarkedDefault(annotation string) func(runtime.Object) string {
	return func(o runtime.Object) string {
		acc := o.(metav1.Object)
		if acc.GetAnnotations()[annotation] == "true" {
			return acc.GetName() + " (default)"
		}
		return acc.GetName()
	}
}

// OrNone is a cell's text: s, or kube's "<none>" when it is empty.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// AgeCell is the Age cell of obj, kube's human duration since creation.
func AgeCell(obj runtime.Object) any {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return "<unknown>"
	}
	return humanAge(acc.GetCreationTimestamp())
}

func humanAge(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}

// table converts an object or a list to kube's Table, rows carrying the objects' metadata.
func (h *Handler) table(r *Resource, obj runtime.Object, withColumns bool) (*metav1.Table, error) {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if withColumns {
		t.ColumnDefinitions = h.columns(r)
	}
	var items []runtime.Object
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		if lacc, err := meta.ListAccessor(obj); err == nil {
			t.ResourceVersion, t.Continue, t.RemainingItemCount = lacc.GetResourceVersion(), lacc.GetContinue(), lacc.GetRemainingItemCount()
		}
		if r.TableOrder != nil {
			items = slices.Clone(items)
			slices.SortStableFunc(items, r.TableOrder)
		}
	} else {
		items = []runtime.Object{obj}
		if acc, err := meta.Accessor(obj); err == nil {
			t.ResourceVersion = acc.GetResourceVersion()
		}
	}
	t.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		row, err := h.row(r, item)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func (h *Handler) columns(r *Resource) []metav1.TableColumnDefinition {
	cols := []metav1.TableColumnDefinition{nameColumn}
	cols = append(cols, r.Columns...)
	if !r.NoAgeColumn && !hasAge(r.Columns) {
		cols = append(cols, ageColumn)
	}
	return cols
}

func hasAge(cols []metav1.TableColumnDefinition) bool {
	for _, c := range cols {
		if c.Name == "Age" || c.Name == "Created At" {
			return true
		}
	}
	return false
}

func (h *Handler) row(r *Resource, obj runtime.Object) (metav1.TableRow, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, err
	}
	cells := []any{acc.GetName()}
	if r.NameCell != nil {
		cells[0] = r.NameCell(obj)
	}
	if r.Cells != nil {
		cells = append(cells, r.Cells(obj)...)
	}
	if !r.NoAgeColumn && !hasAge(r.Columns) {
		cells = append(cells, humanAge(acc.GetCreationTimestamp()))
	}
	pom, err := partialMetadata(obj)
	if err != nil {
		return metav1.TableRow{}, err
	}
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: pom}}, nil
}

// partialMetadata turns an object or a list into PartialObjectMetadata(List).
func partialMetadata(obj runtime.Object) (runtime.Object, error) {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}}
		if lacc, err := meta.ListAccessor(obj); err == nil {
			list.ResourceVersion, list.Continue, list.RemainingItemCount = lacc.GetResourceVersion(), lacc.GetContinue(), lacc.GetRemainingItemCount()
		}
		for _, item := range items {
			p, err := partialMetadata(item)
			if err != nil {
				return nil, err
			}
			list.Items = append(list.Items, *p.(*metav1.PartialObjectMetadata))
		}
		return list, nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}}
	p.ObjectMeta = metav1.ObjectMeta{
		Name: acc.GetName(), GenerateName: acc.GetGenerateName(), Namespace: acc.GetNamespace(), UID: acc.GetUID(),
		ResourceVersion: acc.GetResourceVersion(), Generation: acc.GetGeneration(), CreationTimestamp: acc.GetCreationTimestamp(),
		DeletionTimestamp: acc.GetDeletionTimestamp(), DeletionGracePeriodSeconds: acc.GetDeletionGracePeriodSeconds(),
		Labels: acc.GetLabels(), Annotations: acc.GetAnnotations(), OwnerReferences: acc.GetOwnerReferences(),
		Finalizers: acc.GetFinalizers(), ManagedFields: acc.GetManagedFields(),
	}
	return p, nil
}
