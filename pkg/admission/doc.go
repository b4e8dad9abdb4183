// Package admission is kube's admission for every backend's writes (Install puts it on a
// backend's registry), in kube's order: the built-in mutating plugins (NamespaceLifecycle
// everywhere; LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds,
// DefaultStorageClass, DefaultIngressClass and StorageObjectInUseProtection where pods are
// served), MutatingAdmissionPolicies, mutating webhooks; then, after the kind's own
// validation, the built-in validating plugins (Priority, LimitRanger, PodSecurity),
// ValidatingAdmissionPolicies, validating webhooks and ResourceQuota.
//
// It holds the admission configuration kinds core serves (webhook configurations, policies
// and their bindings, with kube's defaults and validation), the webhook calls (with a breaker
// per webhook), the CEL policy engines (kube's libraries) and the watch
// that keeps the configurations current, read from a registry.Source: core's own registry in
// core, a copy kept through core's gRPC API in the other services. The built-in plugins are one
// package each under plugin/.
package admission
