// Package admission is kube's admission for every backend's writes (Install puts it on a
// backend's registry), in kube's order: the built-in mutating plugins (NamespaceLifecycle
// everywhere; LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds,
// DefaultStorageClass, DefaultIngressClass and StorageObjectInUseProtection where pods are
// served), MutatingAdmissionPolicies, mutating webhooks; then, after the kind's own
// validation, the built-in validating plugins (Priority, LimitRanger, PodSecurity),
// ValidatingAdmissionPolicies, validating webhooks and ResourceQuota.
//
// It holds the Chain that runs them in that order and Install, which builds a backend's chain,
// names its failing webhooks in /readyz?verbose, and keeps the webhooks and policies current
// with a watch of the admission configuration read from a registry.Source (core's own
// registry in core, a copy kept through core's gRPC API in the other services). The parts are
// packages of their own: configuration (the configuration kinds core serves, with kube's
// defaults and validation), webhook (the webhook calls, with a breaker per webhook), policy
// (the CEL policy engines, on kube's libraries), match (what webhooks and policies share to
// match a write) and, one package each, the built-in plugins under plugin/.
package admission
