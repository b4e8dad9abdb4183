package core

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resourceQuotas are v1 ResourceQuotas with kube's validation and columns. Core's quota
// controller keeps their status (hard and used); the ResourceQuota admission plugin charges
// each create against them.
func resourceQuotas() *registry.Resource {
	return &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "resourcequotas", SingularName: "resourcequota", Kind: "ResourceQuota",
		Namespaced: true, ShortNames: []string{"quota"}, Subresources: []string{"status"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[corev1.ResourceQuota](), NewList: registry.Of[corev1.ResourceQuotaList](),
		Validate: func(o runtime.Object) field.ErrorList { return validateResourceQuota(o.(*corev1.ResourceQuota), nil) },
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validateResourceQuota(o.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota))
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
			registry.Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.")},
		Cells: quotaCells,
	}
}

// quotaCells are kube's: "<resource>: <used>/<hard>" for each hard resource in kube's
// order, the limits.* ones in Limit.
func quotaCells(o runtime.Object) []any {
	q := o.(*corev1.ResourceQuota)
	names := make([]string, 0, len(q.Spec.Hard))
	for k := range q.Spec.Hard {
		names = append(names, string(k))
	}
	sort.Strings(names)
	var request, limit []string
	for _, k := range names {
		used, hard := q.Status.Used[corev1.ResourceName(k)], q.Status.Hard[corev1.ResourceName(k)]
		cell := fmt.Sprintf("%s: %s/%s", k, used.String(), hard.String())
		if pieces := strings.Split(k, "."); len(pieces) > 1 && pieces[0] == "limits" {
			limit = append(limit, cell)
		} else {
			request = append(request, cell)
		}
	}
	return []any{strings.Join(request, ", "), strings.Join(limit, ", ")}
}

var (
	quotaStandardResources = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
		"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
		"replicationcontrollers", "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers")
	quotaIntegerResources = sets.New("pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
		"persistentvolumeclaims", "services.nodeports", "services.loadbalancers")
	quotaScopes = sets.New(string(corev1.ResourceQuotaScopeTerminating), string(corev1.ResourceQuotaScopeNotTerminating),
		string(corev1.ResourceQuotaScopeBestEffort), string(corev1.ResourceQuotaScopeNotBestEffort), string(corev1.ResourceQuotaScopePriorityClass),
		string(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), string(corev1.ResourceQuotaScopeVolumeAttributesClass))
	podComputeQuota = sets.New("cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")
)

func quotaHugePages(name string) bool {
	return strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(name, corev1.ResourceRequestsHugePagesPrefix)
}

// validateResourceQuota is kube's validation of a quota (old: the stored one on update,
// whose scopes may not change).
func validateResourceQuota(q, old *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for _, part := range []struct {
		path *field.Path
		list corev1.ResourceList
	}{{spec.Child("hard"), q.Spec.Hard}, {field.NewPath("status", "hard"), q.Status.Hard}, {field.NewPath("status", "used"), q.Status.Used}} {
		for _, k := range validate.SortedNames(part.list) {
			p := part.path.Key(k)
			errs = append(errs, validateQuotaResourceName(k, p)...)
			v := part.list[corev1.ResourceName(k)]
			if v.Cmp(resource.Quantity{}) < 0 {
				errs = append(errs, field.Invalid(p, v.String(), "must be greater than or equal to 0"))
			}
			if (quotaIntegerResources.Has(k) || strings.HasPrefix(k, "count/")) && v.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(p, v, "must be an integer"))
			}
		}
	}
	scopes := sets.New[string]()
	for _, s := range q.Spec.Scopes {
		if !quotaScopes.Has(string(s)) {
			errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, "unsupported scope"))
		}
		for _, k := range validate.SortedNames(q.Spec.Hard) {
			if (quotaStandardResources.Has(k) || quotaHugePages(k)) && !scopeValidFor(s, k) {
				errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, "unsupported scope applied to resource"))
			}
		}
		scopes.Insert(string(s))
	}
	for _, pair := range [][2]corev1.ResourceQuotaScope{{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
		{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}} {
		if scopes.Has(string(pair[0])) && scopes.Has(string(pair[1])) {
			errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, "conflicting scopes"))
		}
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for _, r := range sel.MatchExpressions {
			if !quotaScopes.Has(string(r.ScopeName)) {
				errs = append(errs, field.Invalid(spec.Child("scopeSelector", "matchExpressions"), r.ScopeName, "unsupported scope"))
			}
		}
	}
	if old != nil && !sets.New(scopeNames(old.Spec.Scopes)...).Equal(sets.New(scopeNames(q.Spec.Scopes)...)) {
		errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, validate.FieldImmutableErrorMsg))
	}
	return errs
}

func scopeNames(s []corev1.ResourceQuotaScope) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// scopeValidFor is kube's IsResourceQuotaScopeValidForResource for the standard resources.
func scopeValidFor(scope corev1.ResourceQuotaScope, name string) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass:
		return name == "pods" || podComputeQuota.Has(name)
	case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return name == "pods"
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == "persistentvolumeclaims" || name == "requests.storage"
	}
	return true
}

func validateQuotaResourceName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validate.InvalidEach(p, name, validation.IsQualifiedName(name))...)
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(name, "/") {
		if !validate.StandardResources.Has(name) && !quotaHugePages(name) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
		}
		if !quotaStandardResources.Has(name) && !quotaHugePages(name) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
		}
	}
	return errs
}
