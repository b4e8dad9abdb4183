package rbac

import (
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/validate"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacName is kube's minimal name rule for roles and bindings: any valid path segment, so
// names like "system:controller:attachdetach-controller" are allowed.
func rbacName(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }

// validatePolicyRule is kube's: verbs always; non-resource URLs only in cluster roles and
// never mixed with resources; resource rules name groups and resources, and resource names
// only with a single resource.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	if len(rule.ResourceNames) > 0 && len(rule.Resources) > 1 {
		errs = append(errs, field.Required(p.Child("resourceNames"), "resource names cannot apply to multiple resources"))
	}
	return errs
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		errs = append(errs, validatePolicyRule(rule, namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

func validateRole(o runtime.Object) field.ErrorList {
	return validateRules(o.(*rbacv1.Role).Rules, true)
}

func validateClusterRole(o runtime.Object) field.ErrorList {
	return validateRules(o.(*rbacv1.ClusterRole).Rules, false)
}

// validateBinding is kube's ValidateRoleBinding and ValidateClusterRoleBinding: a role in
// rbac.authorization.k8s.io of an allowed kind, and subjects kube knows.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(field.NewPath("roleRef", "apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(field.NewPath("roleRef", "kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(field.NewPath("roleRef", "name"), ""))
	} else {
		errs = append(errs, validate.InvalidEach(field.NewPath("roleRef", "name"), ref.Name, rbacName(ref.Name, false))...)
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			errs = append(errs, validate.InvalidEach(p.Child("name"), s.Name, apivalidation.ValidateServiceAccountName(s.Name, false))...)
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.Name == "" {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, strings.ToLower(s.Kind)+" name cannot be empty"))
		}
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func validateRoleBinding(o runtime.Object) field.ErrorList {
	b := o.(*rbacv1.RoleBinding)
	return validateBinding(b.RoleRef, b.Subjects, true)
}

func validateClusterRoleBinding(o runtime.Object) field.ErrorList {
	b := o.(*rbacv1.ClusterRoleBinding)
	return validateBinding(b.RoleRef, b.Subjects, false)
}

// A binding's role cannot change: the grant would change under its name.
func roleRefImmutable(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func validateRoleBindingUpdate(o, old runtime.Object) field.ErrorList {
	return roleRefImmutable(o.(*rbacv1.RoleBinding).RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
}

func validateClusterRoleBindingUpdate(o, old runtime.Object) field.ErrorList {
	return roleRefImmutable(o.(*rbacv1.ClusterRoleBinding).RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// kubectl's columns, as kube's printers define them.
var (
	bindingColumns = []metav1.TableColumnDefinition{
		registry.Column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		registry.AgeColumn,
		registry.Wide(registry.Column("Users", "string", "Users in the roleBinding")),
		registry.Wide(registry.Column("Groups", "string", "Groups in the roleBinding")),
		registry.Wide(registry.Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding")),
	}
)

func bindingCells(ref rbacv1.RoleRef, subjects []rbacv1.Subject, o runtime.Object) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []any{ref.Kind + "/" + ref.Name, registry.AgeCell(o),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

func roleBindingCells(o runtime.Object) []any {
	b := o.(*rbacv1.RoleBinding)
	return bindingCells(b.RoleRef, b.Subjects, o)
}

func clusterRoleBindingCells(o runtime.Object) []any {
	b := o.(*rbacv1.ClusterRoleBinding)
	return bindingCells(b.RoleRef, b.Subjects, o)
}
