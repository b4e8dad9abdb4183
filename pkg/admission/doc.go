// Package admission is kube's admission chain for the backends that own resources (core and
// extensions): the webhook configuration kinds with kube's defaults and validation, and the
// dispatch of a write to mutating webhooks (before validation) and validating webhooks (after
// it, before storage), fed by a watch of the configurations.
package admission
