package policystatus

import (
	"testing"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The type checker finds a policy's expressions that do not fit the schemas of the kinds it
// matches, with kube's warnings, and leaves well-typed ones alone.
func TestTypeChecker(t *testing.T) {
	cm := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap",
		Namespaced: true, New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }}
	set := registry.NewSet(cm)
	doc, err := set.OpenAPIV2()
	require.NoError(t, err)
	checker, err := NewTypeChecker(doc, []*registry.Resource{cm})
	require.NoError(t, err)

	policy := func(exprs ...string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}}}}
		for _, e := range exprs {
			p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: e})
		}
		return p
	}
	assert.Empty(t, checker.Check(policy("size(object.data) < 3", "object.metadata.name != ''")))
	warnings := checker.Check(policy("object.data.size() < 3", "object.spec.replicas > 0"))
	require.Len(t, warnings, 1)
	assert.Equal(t, "spec.validations[1].expression", warnings[0].FieldRef)
	assert.Contains(t, warnings[0].Warning, "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'")
}
