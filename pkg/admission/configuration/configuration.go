// Package configuration holds the admission configuration kinds core serves, as registry
// resources with kube's defaults and validation: MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations, ValidatingAdmissionPolicies and MutatingAdmissionPolicies
// with their bindings.
package configuration

import "github.com/apichain/apichain/pkg/registry"

// Resources are the admission configuration kinds core serves.
func Resources() []*registry.Resource {
	return []*registry.Resource{MutatingAdmissionPolicies(), MutatingAdmissionPolicyBindings(), MutatingWebhookConfigurations(),
		ValidatingAdmissionPolicies(), ValidatingAdmissionPolicyBindings(), ValidatingWebhookConfigurations()}
}
