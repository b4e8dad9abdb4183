package configuration

import (
	"fmt"
	"strings"
	"sync"

	"github.com/apichain/apichain/pkg/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/ptr"
)

// MutatingWebhookConfigurations and ValidatingWebhookConfigurations are kube's
// admissionregistration.k8s.io/v1 webhook configurations, with kube's defaults and
// validation. Core serves them; every backend that admits requests watches them.
func MutatingWebhookConfigurations() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "mutatingwebhookconfigurations", SingularName: "mutatingwebhookconfiguration", Kind: "MutatingWebhookConfiguration",
		Categories: []string{"api-extensions"},
		New:        func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList:    func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Default:    func(o runtime.Object) { defaultMutating(o.(*admissionregistrationv1.MutatingWebhookConfiguration)) },
		Validate: func(o runtime.Object) field.ErrorList {
			return validateMutating(o.(*admissionregistrationv1.MutatingWebhookConfiguration), nil)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validateMutating(o.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration))
		},
		Columns: []metav1.TableColumnDefinition{{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"}},
		Cells: func(o runtime.Object) []any {
			return []any{int64(len(o.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks))}
		},
	}
}

// ValidatingWebhookConfigurations: see MutatingWebhookConfigurations.
func ValidatingWebhookConfigurations() *registry.Resource {
	return &registry.Resource{GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name: "validatingwebhookconfigurations", SingularName: "validatingwebhookconfiguration", Kind: "ValidatingWebhookConfiguration",
		Categories: []string{"api-extensions"},
		New:        func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:    func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Default:    func(o runtime.Object) { defaultValidating(o.(*admissionregistrationv1.ValidatingWebhookConfiguration)) },
		Validate: func(o runtime.Object) field.ErrorList {
			return validateValidating(o.(*admissionregistrationv1.ValidatingWebhookConfiguration), nil)
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			return validateValidating(o.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration))
		},
		Columns: []metav1.TableColumnDefinition{{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"}},
		Cells: func(o runtime.Object) []any {
			return []any{int64(len(o.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks))}
		},
	}
}

// --- defaults, as kube's admissionregistration/v1 defaulting

func defaultHook(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType,
	ns, obj **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *fp == nil {
		*fp = ptr.To(admissionregistrationv1.Fail)
	}
	if *mp == nil {
		*mp = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To[int32](10)
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
}

func defaultMutating(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		defaultHook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
		if h.ReinvocationPolicy == nil {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

func defaultValidating(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		defaultHook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
	}
}

// --- validation, as kube's admissionregistration validation (same rules and messages)

var (
	failurePolicies    = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	matchPolicies      = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
	reinvocation       = sets.New(string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy))
	allSideEffects     = sets.New("Unknown", "None", "Some", "NoneOnDryRun")
	noSideEffects      = sets.New("None", "NoneOnDryRun")
	operations         = sets.New("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
	scopes             = sets.New("Cluster", "Namespaced", "*")
	reviewVersions     = []string{"v1", "v1beta1"}
	maxMatchConditions = 64
	statelessCompiler  = sync.OnceValue(func() plugincel.Compiler {
		return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	celIdentifierReserv = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

// hookCommon is what the two kinds of webhook share, for one validation.
type hookCommon struct {
	name                      string
	rules                     []admissionregistrationv1.RuleWithOperations
	failurePolicy             *admissionregistrationv1.FailurePolicyType
	matchPolicy               *admissionregistrationv1.MatchPolicyType
	sideEffects               *admissionregistrationv1.SideEffectClass
	timeout                   *int32
	namespaceSelector, objSel *metav1.LabelSelector
	clientConfig              admissionregistrationv1.WebhookClientConfig
	matchConditions           []admissionregistrationv1.MatchCondition
	admissionReviewVersions   []string
	reinvocationPolicy        *admissionregistrationv1.ReinvocationPolicyType
	mutating                  bool
}

// ratchet holds what an update may keep from the stored object although new objects may not
// have it (kube's validation options derived from the old object).
type ratchet struct {
	allowSideEffects, allowUnknownReviewVersions, allowDuplicateNames, allowInvalidLabelValues bool
	storedExpressions                                                                          sets.Set[string]
	sameMatchConditions                                                                        bool
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []hookCommon {
	var out []hookCommon
	for _, h := range c.Webhooks {
		out = append(out, hookCommon{name: h.Name, rules: h.Rules, failurePolicy: h.FailurePolicy, matchPolicy: h.MatchPolicy,
			sideEffects: h.SideEffects, timeout: h.TimeoutSeconds, namespaceSelector: h.NamespaceSelector, objSel: h.ObjectSelector,
			clientConfig: h.ClientConfig, matchConditions: h.MatchConditions, admissionReviewVersions: h.AdmissionReviewVersions,
			reinvocationPolicy: h.ReinvocationPolicy, mutating: true})
	}
	return out
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []hookCommon {
	var out []hookCommon
	for _, h := range c.Webhooks {
		out = append(out, hookCommon{name: h.Name, rules: h.Rules, failurePolicy: h.FailurePolicy, matchPolicy: h.MatchPolicy,
			sideEffects: h.SideEffects, timeout: h.TimeoutSeconds, namespaceSelector: h.NamespaceSelector, objSel: h.ObjectSelector,
			clientConfig: h.ClientConfig, matchConditions: h.MatchConditions, admissionReviewVersions: h.AdmissionReviewVersions})
	}
	return out
}

func validateMutating(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	var oldHooks []hookCommon
	if old != nil {
		oldHooks = mutatingHooks(old)
	}
	return validateHooks(mutatingHooks(c), oldHooks, old != nil)
}

func validateValidating(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	var oldHooks []hookCommon
	if old != nil {
		oldHooks = validatingHooks(old)
	}
	return validateHooks(validatingHooks(c), oldHooks, old != nil)
}

func ratchetFrom(old []hookCommon, update bool) ratchet {
	r := ratchet{storedExpressions: sets.New[string]()}
	if !update {
		return r
	}
	names := sets.New[string]()
	for _, h := range old {
		if h.sideEffects == nil || !noSideEffects.Has(string(*h.sideEffects)) {
			r.allowSideEffects = true
		}
		if len(h.admissionReviewVersions) > 0 && !sets.New(h.admissionReviewVersions...).HasAny(reviewVersions...) {
			r.allowUnknownReviewVersions = true
		}
		if names.Has(h.name) {
			r.allowDuplicateNames = true
		}
		names.Insert(h.name)
		for _, sel := range []*metav1.LabelSelector{h.namespaceSelector, h.objSel} {
			if sel != nil && len(metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				r.allowInvalidLabelValues = true
			}
		}
		for _, mc := range h.matchConditions {
			r.storedExpressions.Insert(mc.Expression)
		}
	}
	return r
}

func validateHooks(hooks, old []hookCommon, update bool) field.ErrorList {
	r := ratchetFrom(old, update)
	if update && len(hooks) == len(old) {
		r.sameMatchConditions = true
		for i := range hooks {
			if fmt.Sprint(hooks[i].matchConditions) != fmt.Sprint(old[i].matchConditions) {
				r.sameMatchConditions = false
			}
		}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, h := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateHook(h, r, p)...)
		errs = append(errs, validateReviewVersions(h.admissionReviewVersions, !r.allowUnknownReviewVersions, p.Child("admissionReviewVersions"))...)
		if !r.allowDuplicateNames && h.name != "" {
			if names.Has(h.name) {
				errs = append(errs, field.Duplicate(p.Child("name"), h.name))
			}
			names.Insert(h.name)
		}
	}
	return errs
}

func validateHook(h hookCommon, r ratchet, p *field.Path) field.ErrorList {
	errs := validation.IsFullyQualifiedName(p.Child("name"), h.name)
	for i, rule := range h.rules {
		errs = append(errs, validateRuleWithOperations(rule, p.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !failurePolicies.Has(string(*h.failurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *h.failurePolicy, sets.List(failurePolicies)))
	}
	if h.matchPolicy != nil && !matchPolicies.Has(string(*h.matchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *h.matchPolicy, sets.List(matchPolicies)))
	}
	allowed := noSideEffects
	if r.allowSideEffects {
		allowed = allSideEffects
	}
	if h.sideEffects == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(allowed), ", "))))
	} else if !allowed.Has(string(*h.sideEffects)) {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *h.sideEffects, sets.List(allowed)))
	}
	if h.timeout != nil && (*h.timeout > 30 || *h.timeout < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *h.timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: r.allowInvalidLabelValues}
	if h.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.namespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	if h.objSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.objSel, opts, p.Child("objectSelector"))...)
	}
	if h.mutating && h.reinvocationPolicy != nil && !reinvocation.Has(string(*h.reinvocationPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *h.reinvocationPolicy, sets.List(reinvocation)))
	}
	cc := h.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhook.ValidateWebhookURL(p.Child("clientConfig").Child("url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		errs = append(errs, webhook.ValidateWebhookService(p.Child("clientConfig").Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	if !r.sameMatchConditions {
		errs = append(errs, validateMatchConditions(h.matchConditions, false, r.storedExpressions, p.Child("matchConditions"))...)
	}
	return errs
}

func hasWildcard(s []string) bool {
	for _, v := range s {
		if v == "*" {
			return true
		}
	}
	return false
}

func validateRuleWithOperations(r admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := make([]string, len(r.Operations))
	for i, o := range r.Operations {
		ops[i] = string(o)
	}
	if len(ops) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(ops) > 1 && hasWildcard(ops) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, o := range r.Operations {
		if !operations.Has(string(o)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), o, sets.List(operations)))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !scopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, sets.List(scopes)))
	}
	return errs
}

func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	wildSub, wildRes := sets.New[string](), sets.New[string]() // x/*, */x
	double, single, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		double = double || rs == "*/*"
		single = single || rs == "*"
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && double {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if single && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("must specify one of %v", strings.Join(reviewVersions, ", ")))}
	}
	seen := sets.New[string]()
	known := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		known = known || v == "v1" || v == "v1beta1"
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(p, versions, fmt.Sprintf("must include at least one of %v", strings.Join(reviewVersions, ", "))))
	}
	return errs
}

// celError is a CEL compilation error as kube reports it in a field error.
func celError(p *field.Path, expr string, err *cel.Error) *field.Error {
	switch err.Type {
	case cel.ErrorTypeRequired:
		return field.Required(p, err.Detail)
	case cel.ErrorTypeInvalid:
		return field.Invalid(p, expr, err.Detail)
	default:
		return field.InternalError(p, err)
	}
}
