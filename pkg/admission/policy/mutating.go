package policy

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apichain/apichain/pkg/admission/match"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Mutable is what the registry's admission attributes offer mutating policies: the scheme's
// object interfaces for the request's kind, and its type for ApplyConfiguration patches.
type Mutable interface {
	ObjectInterfaces() admission.ObjectInterfaces
	TypeConverter() (managedfields.TypeConverter, error)
}

// MutatingPolicies is kube's MutatingAdmissionPolicy admission: each policy compiled with
// kube's CEL libraries when it changes, matched to each create and update with its bindings,
// and its mutations (ApplyConfiguration merged as server-side apply does, or JSONPatch)
// applied in order per binding and param. Errors deny the request unless the policy's
// failurePolicy is Ignore.
type MutatingPolicies struct {
	hooks atomic.Pointer[[]*mutatingPolicyHook]
	base  *Policies // matching, namespaces and params, as for validating policies
}

type mutatingPolicyHook = boundPolicy[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, compiledMutations]

type compiledMutations struct {
	matcher  matchconditions.Matcher
	patchers []patch.Patcher
	compiler *plugincel.CompositedCompiler
	err      error
}

// NewMutatingPolicies returns mutating policy admission with no policies yet, matching and
// reading params as base does.
func NewMutatingPolicies(base *Policies) *MutatingPolicies {
	m := &MutatingPolicies{base: base}
	m.hooks.Store(&[]*mutatingPolicyHook{})
	return m
}

// SetPolicies compiles the policies and pairs them with their bindings.
func (m *MutatingPolicies) SetPolicies(policies []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	hooks := bindPolicies(policies, bindings, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName },
		*m.hooks.Load(), compileMutatingPolicy)
	m.hooks.Store(&hooks)
}

// compileMutatingPolicy compiles variables, match conditions and mutations as kube does.
func compileMutatingPolicy(pol *admissionregistrationv1.MutatingAdmissionPolicy) compiledMutations {
	vars := plugincel.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return compiledMutations{err: err}
	}
	variables := make([]plugincel.NamedExpressionAccessor, len(pol.Spec.Variables))
	for i, v := range pol.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	out := compiledMutations{compiler: c}
	if mcs := pol.Spec.MatchConditions; len(mcs) > 0 {
		exprs := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			exprs[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		out.matcher = matchconditions.NewMatcher(c.CompileCondition(exprs, vars, environment.StoredExpressions), pol.Spec.FailurePolicy, "policy", "validate", pol.Name)
	}
	patchVars := vars
	patchVars.HasPatchTypes = true
	for _, mu := range pol.Spec.Mutations {
		switch {
		case mu.PatchType == admissionregistrationv1.PatchTypeJSONPatch && mu.JSONPatch != nil:
			out.patchers = append(out.patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(
				&patch.JSONPatchCondition{Expression: mu.JSONPatch.Expression}, patchVars, environment.StoredExpressions)))
		case mu.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && mu.ApplyConfiguration != nil:
			out.patchers = append(out.patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(
				&patch.ApplyConfigurationCondition{Expression: mu.ApplyConfiguration.Expression}, patchVars, environment.StoredExpressions)))
		}
	}
	return out
}

// policyError is a policy's failure to mutate; with failurePolicy Fail it denies the request.
type policyError struct {
	policy, binding string
	err             error
	reason          metav1.StatusReason
}

func (e policyError) Error() string {
	if e.binding == "" {
		return fmt.Sprintf("policy %q denied request: %s", e.policy, e.err)
	}
	return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy, e.binding, e.err)
}

// Admit applies the mutations of every matching policy, binding and param in order. With
// reinvoke, only the policies whose reinvocationPolicy is IfNeeded run (kube's second round,
// after a later plugin changed the object). It reports whether it changed the object.
func (m *MutatingPolicies) Admit(ctx context.Context, a admission.Attributes, reinvoke bool) (runtime.Object, bool, error) {
	hooks := *m.hooks.Load()
	if len(hooks) == 0 || match.Exempt(a) || a.GetObject() == nil || (a.GetOperation() != admission.Create && a.GetOperation() != admission.Update) {
		return a.GetObject(), false, nil
	}
	mutable, ok := a.(Mutable)
	if !ok {
		return a.GetObject(), false, nil
	}
	va := match.Versioned(a)
	var failed []policyError
	changed := false
	for _, h := range hooks {
		pol := h.policy
		if reinvoke && pol.Spec.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			continue
		}
		configError := func(err error, binding string) {
			prefix := "failed to configure policy: "
			if binding != "" {
				prefix = "failed to configure binding: "
			}
			failed = append(failed, policyError{policy: pol.Name, binding: binding, err: fmt.Errorf("%s%w", prefix, err)})
		}
		if pol.Spec.MatchConstraints == nil {
			configError(errors.New("policy contained no match constraints, a required field"), "")
			continue
		}
		ok, matchedResource, err := m.base.matches(ctx, a, pol.Spec.MatchConstraints)
		if err != nil {
			configError(err, "")
			continue
		}
		if !ok {
			continue
		}
		if h.compiled.err != nil {
			configError(h.compiled.err, "")
			continue
		}
		for _, b := range h.bindings {
			if mr := b.Spec.MatchResources; mr != nil {
				ok, _, err := m.base.matches(ctx, a, mr)
				if err != nil {
					configError(err, b.Name)
					continue
				}
				if !ok {
					continue
				}
			}
			params, err := m.base.collectParams(ctx, pol.Spec.ParamKind, b.Spec.ParamRef, a.GetNamespace())
			if err != nil {
				configError(err, b.Name)
				continue
			}
			var ns *corev1.Namespace
			if name := a.GetNamespace(); name != "" && a.GetKind() != corev1.SchemeGroupVersion.WithKind("Namespace") {
				if ns, err = m.base.namespaces(ctx, name); err != nil {
					return nil, false, err
				}
			}
			evalCtx := h.compiled.compiler.CreateContext(ctx)
			for _, param := range params {
				if h.compiled.matcher != nil {
					res := h.compiled.matcher.Match(evalCtx, va, param, nil)
					if res.Error != nil {
						failed = append(failed, policyError{policy: pol.Name, binding: b.Name, err: res.Error, reason: metav1.StatusReasonInvalid})
						continue
					}
					if !res.Matches {
						continue
					}
				}
				before := va.VersionedObject.Object()
				for _, p := range h.compiled.patchers {
					if err := m.mutate(evalCtx, p, mutable, va, matchedResource, ns, param); err != nil {
						var status *apierrors.StatusError
						if errors.As(err, &status) {
							return nil, false, status
						}
						failed = append(failed, policyError{policy: pol.Name, binding: b.Name, err: err, reason: metav1.StatusReasonInvalid})
					}
				}
				if !apiequality.Semantic.DeepEqual(before, va.VersionedObject.Object()) {
					changed = true
				}
			}
		}
	}
	for _, f := range failed {
		if fp := policyFailurePolicy(hooks, f.policy); fp == admissionregistrationv1.Ignore {
			continue
		}
		var status *apierrors.StatusError
		if !errors.As(admission.NewForbidden(a, errors.New("admission request denied by policy")), &status) {
			return nil, false, apierrors.NewInternalError(f)
		}
		status.ErrStatus.Message = f.Error()
		if f.reason != "" {
			status.ErrStatus.Reason = f.reason
		}
		for _, g := range failed {
			if policyFailurePolicy(hooks, g.policy) != admissionregistrationv1.Ignore {
				status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: g.Error()})
			}
		}
		return nil, false, status
	}
	return va.VersionedObject.Object(), changed, nil
}

func policyFailurePolicy(hooks []*mutatingPolicyHook, name string) admissionregistrationv1.FailurePolicyType {
	for _, h := range hooks {
		if h.policy.Name == name && h.policy.Spec.FailurePolicy != nil {
			return *h.policy.Spec.FailurePolicy
		}
	}
	return admissionregistrationv1.Fail
}

// mutate applies one mutation to the request's object, as kube's dispatcher does.
func (m *MutatingPolicies) mutate(ctx context.Context, p patch.Patcher, mutable Mutable, va *admission.VersionedAttributes,
	resource schema.GroupVersionResource, ns *corev1.Namespace, param runtime.Object) error {
	tc, err := mutable.TypeConverter()
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", va.VersionedKind))
	}
	o := mutable.ObjectInterfaces()
	out, err := p.Patch(ctx, patch.Request{MatchedResource: resource, VersionedAttributes: va, ObjectInterfaces: o,
		OptionalVariables: plugincel.OptionalVariableBindings{VersionedParams: param}, Namespace: ns, TypeConverter: tc},
		celconfig.RuntimeCELCostBudget)
	if err != nil {
		return err
	}
	if _, ok := va.VersionedObject.Object().(*unstructured.Unstructured); !ok {
		if out, err = o.GetObjectConvertor().ConvertToVersion(out, va.GetKind().GroupVersion()); err != nil {
			return err
		}
	}
	o.GetObjectDefaulter().Default(out)
	va.UpdateObject(out)
	return nil
}
