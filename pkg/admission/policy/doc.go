// Package policy is kube's CEL admission policies: ValidatingAdmissionPolicies (Policies) and
// MutatingAdmissionPolicies (MutatingPolicies). Each policy is compiled with kube's CEL
// libraries when it changes, paired with the bindings that name it, and evaluated on the
// writes it and its bindings match.
package policy
