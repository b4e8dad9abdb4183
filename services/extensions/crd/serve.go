package crd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apichain/apichain/pkg/openapi"
	"github.com/apichain/apichain/pkg/registry"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// CustomResources are the resources the established CRDs define, one per served version,
// with kube's schema semantics from k8s.io/apiextensions-apiserver's schema packages: unknown
// fields pruned (unless preserved), defaults applied, metadata coerced, OpenAPI and CEL
// validation with kube's messages and cost limits. A resource is kept while its CRD version
// is unchanged, so its watch cache and watches go on.
type CustomResources struct {
	byKey map[string]customResourceVersion
}

type customResourceVersion struct {
	resource *registry.Resource
	openapi  openapi.CustomKind
}

// Of returns the resources of crds and whether they differ from the last call's.
func (c *CustomResources) Of(crds []*apiextensionsv1.CustomResourceDefinition, log *slog.Logger) ([]*registry.Resource, bool) {
	next := map[string]customResourceVersion{}
	var out []*registry.Resource
	for _, crd := range crds {
		if !IsEstablished(crd) {
			continue
		}
		conversion := sync.OnceValues(func() (*webhookConversion, error) { return newWebhookConversion(crd) }) // one for the CRD's versions
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d/%v/%s", crd.UID, v.Name, crd.Generation, crd.Status.AcceptedNames, crd.Spec.Scope)
			cv, ok := c.byKey[key]
			if !ok {
				conv, err := conversion()
				if err == nil {
					cv, err = customResource(crd, v, conv)
				}
				if err != nil {
					log.Warn("custom resource not served", "crd", crd.Name, "version", v.Name, "err", err)
					continue
				}
			}
			next[key] = cv
			out = append(out, cv.resource)
		}
	}
	// kube's CRD discovery order: a group's versions by kube's version order (v2, v1, v1beta1),
	// the first preferred; a version's resources by name.
	slices.SortStableFunc(out, func(a, b *registry.Resource) int {
		if c := strings.Compare(a.GroupVersion.Group, b.GroupVersion.Group); c != 0 {
			return c
		}
		if c := version.CompareKubeAwareVersionStrings(b.GroupVersion.Version, a.GroupVersion.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	changed := len(next) != len(c.byKey)
	for k := range next {
		if _, ok := c.byKey[k]; !ok {
			changed = true
		}
	}
	c.byKey = next
	return out, changed
}

// customSchema is one version's schema in the forms kube's algorithms take.
type customSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil without x-kubernetes-validations
}

func newCustomSchema(v apiextensionsv1.CustomResourceDefinitionVersion) (*customSchema, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no schema") // CRD validation requires one in v1
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := scheme.Convert(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &customSchema{structural: structural, validator: validator,
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// OpenAPI is the OpenAPI v3 document of each group/version of the custom resources last
// returned by Of, and their kinds (for v2).
func (c *CustomResources) OpenAPI() (map[schema.GroupVersion][]byte, []openapi.CustomKind, error) {
	byGV := map[schema.GroupVersion][]openapi.CustomKind{}
	var all []openapi.CustomKind
	for _, cv := range c.byKey {
		gv := cv.openapi.GVK.GroupVersion()
		byGV[gv] = append(byGV[gv], cv.openapi)
		all = append(all, cv.openapi)
	}
	out := map[schema.GroupVersion][]byte{}
	for gv, kinds := range byGV {
		doc, err := openapi.CustomResourceV3(kinds)
		if err != nil {
			return nil, nil, err
		}
		out[gv] = doc
	}
	return out, all, nil
}

// customResource is a CRD's version as a resource; conv converts it between the CRD's versions
// when its strategy is Webhook (nil: None).
func customResource(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, conv *webhookConversion) (customResourceVersion, error) {
	cs, err := newCustomSchema(v)
	if err != nil {
		return customResourceVersion{}, err
	}
	names := crd.Status.AcceptedNames
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	r := &registry.Resource{
		GroupVersion: gvk.GroupVersion(), Name: names.Plural, SingularName: names.Singular, Kind: names.Kind,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, ShortNames: names.ShortNames, Categories: names.Categories,
		HasSpec: true, New: registry.NewUnstructured(gvk), NewList: registry.NewUnstructuredList(gvk),
		StoragePrefix:    crd.Spec.Group + "/" + names.Plural, // kube's: the group's keys, not the built-ins'
		StorageMediaType: registry.MediaJSON,                  // kube's custom resource codec is JSON's, whatever --storage-media-type says
		TypeConverter:    cs.typeConverter(gvk),
		// Pruned and defaulted where kube's decoder does it: on every request's object (so the
		// field managers see the defaults, as on kube) and on what is read from storage.
		Default:          cs.prepare,
		PrepareForCreate: func(_ context.Context, o runtime.Object) { cs.prepare(o) },
		PrepareForUpdate: func(o, _ runtime.Object) { cs.prepare(o) },
		UnknownFields:    cs.unknownFields,
		ValidateCreate:   func(o runtime.Object) field.ErrorList { return cs.validate(o, nil) },
		ValidateUpdate:   cs.validate,
		ResetStatusMeta:  metav1.ResetObjectMetaForStatus, // kube's status strategy keeps the old object but its status
	}
	for _, sv := range crd.Spec.Versions {
		if sv.Storage && sv.Name != v.Name {
			r.StoredAs = schema.GroupVersion{Group: crd.Spec.Group, Version: sv.Name}
		}
	}
	if conv != nil {
		r.ConvertVersion = conv.convert
	}
	if v.Subresources != nil && v.Subresources.Status != nil {
		r.Subresources = append(r.Subresources, "status")
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		sc := v.Subresources.Scale
		r.Subresources = append(r.Subresources, "scale")
		r.Scale = &registry.ScalePaths{SpecReplicas: sc.SpecReplicasPath, StatusReplicas: sc.StatusReplicasPath}
		if sc.LabelSelectorPath != nil {
			r.Scale.LabelSelector = *sc.LabelSelectorPath
		}
	}
	if len(v.SelectableFields) > 0 {
		r.FieldLabels = selectableFields(v.SelectableFields)
	}
	// kube's custom resource converter: metadata.name, metadata.namespace when namespaced, and
	// the version's selectable fields; any other label is "not supported".
	labels := []string{"metadata.name"}
	if r.Namespaced {
		labels = append(labels, "metadata.namespace")
	}
	for _, f := range v.SelectableFields {
		labels = append(labels, strings.TrimPrefix(f.JSONPath, "."))
	}
	r.FieldLabelConversion = registry.SupportedFieldLabels(labels...)
	if len(v.AdditionalPrinterColumns) > 0 {
		pc, err := newPrinterColumns(v.AdditionalPrinterColumns)
		if err != nil {
			return customResourceVersion{}, err
		}
		r.Columns, r.Cells, r.NoAgeColumn = pc.defs, pc.cells, true
	}
	if crd.DeletionTimestamp != nil {
		// Terminating: what exists can be read and deleted, nothing new is made (kube's 405).
		r.AuthorizeWrite = func(_ context.Context, _, old runtime.Object) error {
			if old != nil {
				return nil
			}
			err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: gvk.Group, Resource: names.Plural}, "create")
			err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
			return err
		}
	}
	return customResourceVersion{resource: r, openapi: openapi.CustomKind{GVK: gvk, Resource: names.Plural,
		Namespaced: r.Namespaced, Schema: cs.structural.ToKubeOpenAPI()}}, nil
}

// typeConverter types the objects for server-side apply by the schema (list types, map keys,
// atomic structs), as kube's CRD field managers are; nil (typed by content) if the schema
// cannot be converted.
func (cs *customSchema) typeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	defs, err := openapi.CustomResourceDefinitions(gvk, cs.structural.ToKubeOpenAPI())
	if err != nil {
		return nil
	}
	tc, err := managedfields.NewTypeConverter(defs, cs.structural.XPreserveUnknownFields)
	if err != nil {
		return nil
	}
	return tc
}

// prepare prunes unknown fields, applies the schema's defaults and drops invalid metadata, as
// kube does to a custom resource it is given.
func (cs *customSchema) prepare(o runtime.Object) {
	u := o.(*unstructured.Unstructured)
	pruning.Prune(u.Object, cs.structural, true)
	structuraldefaulting.Default(u.Object, cs.structural)
	_ = objectmeta.Coerce(nil, u.Object, cs.structural, true, true)
}

// unknownFields are the paths pruning would drop, for fieldValidation.
func (cs *customSchema) unknownFields(o runtime.Object) []string {
	u := o.(*unstructured.Unstructured).DeepCopy()
	return pruning.PruneWithOptions(u.Object, cs.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// validate checks the object as kube's custom resource strategy does: the OpenAPI schema,
// embedded resources' metadata, list sets and maps, then the x-kubernetes-validations CEL
// rules (old is nil on create) within kube's runtime cost budget, unless an error already
// found makes them unsafe to evaluate.
func (cs *customSchema) validate(o, old runtime.Object) field.ErrorList {
	u := o.(*unstructured.Unstructured)
	errs := apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), cs.validator)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, cs.structural, true)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, cs.structural, u.Object)...)
	if cs.cel == nil {
		return errs
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old.(*unstructured.Unstructured).Object
	}
	celErrs, _ := cs.cel.Validate(context.Background(), nil, cs.structural, u.Object, oldObj, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// selectableFields are a version's selectableFields as field selector labels: the JSON path
// without its dot, the value as a string (absent: empty).
func selectableFields(sf []apiextensionsv1.SelectableField) func(runtime.Object) fields.Set {
	return func(o runtime.Object) fields.Set {
		u, _ := o.(*unstructured.Unstructured)
		set := fields.Set{}
		for _, f := range sf {
			name := strings.TrimPrefix(f.JSONPath, ".")
			set[name] = ""
			if u == nil {
				continue
			}
			v, _, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(name, ".")...)
			switch x := v.(type) {
			case string:
				set[name] = x
			case int64:
				set[name] = strconv.FormatInt(x, 10)
			case bool:
				set[name] = strconv.FormatBool(x)
			}
		}
		return set
	}
}
