// Package crd serves apiextensions.k8s.io/v1 CustomResourceDefinitions as kube-apiserver's
// extensions server does: kube's defaulting and validation of the CRD itself (from
// k8s.io/apiextensions-apiserver's API packages: structural schema rules, versions, names,
// CEL rules), its stored versions, and the controller that accepts names and establishes it.
package crd

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// scheme holds the CRD's v1 and internal types with kube's conversions and defaults: kube's
// validation works on the internal type.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Install registers the served type for the registry's codecs.
func Install(s *runtime.Scheme) error { return apiextensionsv1.AddToScheme(s) }

// Resource is customresourcedefinitions with kube's names, columns and rules.
func Resource() *registry.Resource {
	return &registry.Resource{
		GroupVersion: apiextensionsv1.SchemeGroupVersion, Name: "customresourcedefinitions", SingularName: "customresourcedefinition",
		Kind: "CustomResourceDefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
		Subresources: []string{"status"}, HasSpec: true, ValidatesMeta: true,
		StoragePrefix: "apiextensions.k8s.io/customresourcedefinitions", StorageMediaType: registry.MediaJSON,
		// kube keeps CRDs as v1beta1 JSON, the more compact form (its apiextensions server's
		// legacy codec).
		Convert: &registry.Conversion{Stored: apiextensionsv1beta1.SchemeGroupVersion,
			NewStored: func() runtime.Object { return &apiextensionsv1beta1.CustomResourceDefinition{} },
			ToStored: func(o runtime.Object) runtime.Object {
				return convert(o, &apiextensionsv1beta1.CustomResourceDefinition{})
			},
			FromStored: func(o runtime.Object) runtime.Object { return convert(o, &apiextensionsv1.CustomResourceDefinition{}) },
		},
		New:              func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:          func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate:   validateCreate,
		ValidateUpdate:   validateUpdate,
		Columns:          columns,
		Cells:            cells,
		// Deleting a CRD always goes through Terminating: kube's REST adds the cleanup
		// finalizer, which the controller removes once the custom resources are gone.
		PendingDeletion: func(o runtime.Object) bool { return o.(metav1.Object).GetDeletionTimestamp() == nil },
		OnDeletionStart: startDeletion,
	}
}

// convert carries a CRD between its versions through kube's internal type and conversions.
// They cannot fail between v1 and v1beta1 (every field has a place in both); a failure would
// be a bug in them, and panics.
func convert(in runtime.Object, out runtime.Object) runtime.Object {
	var internal apiextensions.CustomResourceDefinition
	if err := scheme.Convert(in, &internal, nil); err != nil {
		panic(err)
	}
	if err := scheme.Convert(&internal, out, nil); err != nil {
		panic(err)
	}
	return out
}

// CleanupFinalizer holds a CRD being deleted until its custom resources are gone.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// startDeletion adds the cleanup finalizer and the Terminating condition, as kube's CRD REST
// does on the first delete.
func startDeletion(o runtime.Object) {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	if !contains(crd.Finalizers, CleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, CleanupFinalizer)
	}
	setCondition(&crd.Status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
		Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"})
}

// kube's CRD table (its tableconvertor): served versions, the storage one marked.
var columns = []metav1.TableColumnDefinition{
	{Name: "Scope", Type: "string", Description: "Cluster/Namespaced"},
	{Name: "Versions", Type: "string", Description: "Served versions"},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	{Name: "Group", Type: "string", Priority: 1, Description: "API group"},
	{Name: "Kind", Type: "string", Priority: 1, Description: "CustomResource kind"},
	{Name: "ShortNames", Type: "string", Priority: 1, Description: "Short names"},
	{Name: "Established", Type: "boolean", Priority: 1, Description: "Established status"},
}

func cells(o runtime.Object) []any {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	var versions []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			label := v.Name
			if v.Storage {
				label += "(storage)"
			}
			versions = append(versions, label)
		}
	}
	sort.Strings(versions)
	return []any{string(crd.Spec.Scope), strings.Join(versions, ","), crd.CreationTimestamp.UTC().Format(time.RFC3339),
		crd.Spec.Group, crd.Spec.Names.Kind, strings.Join(crd.Spec.Names.ShortNames, ","), IsEstablished(crd)}
}

// IsEstablished reports the Established condition.
func IsEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// prepareForCreate applies kube's v1 defaults (singular and list kind, conversion None),
// clears the status and records the storage version, as kube's strategy does.
func prepareForCreate(_ context.Context, o runtime.Object) {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	scheme.Default(crd)
}

// prepareForUpdate defaults the new spec and adds a new storage version to the stored ones.
func prepareForUpdate(o, _ runtime.Object) {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	apiextensionsv1.SetDefaults_CustomResourceDefinitionSpec(&crd.Spec)
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !contains(crd.Status.StoredVersions, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			break
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// internal converts to the type kube's validation takes.
func internal(o runtime.Object) (*apiextensions.CustomResourceDefinition, *field.Error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(o, out, nil); err != nil {
		return nil, field.InternalError(nil, err)
	}
	return out, nil
}

func validateCreate(o runtime.Object) field.ErrorList {
	crd, ferr := internal(o)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	return validation.ValidateCustomResourceDefinition(context.Background(), crd)
}

func validateUpdate(o, old runtime.Object) field.ErrorList {
	crd, ferr := internal(o)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	prev, ferr := internal(old)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	return validation.ValidateCustomResourceDefinitionUpdate(context.Background(), crd, prev)
}
