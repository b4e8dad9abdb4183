package configuration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validHook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: "v.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/x")},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
}

// kube's validation rules and messages for webhook configurations (each case's message
// checked against kube-apiserver 1.37.2 by the admission suite).
func TestValidateWebhookConfiguration(t *testing.T) {
	cases := map[string]struct {
		change func(h *admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		"valid":        {change: func(*admissionregistrationv1.ValidatingWebhook) {}},
		"name":         {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "short" }, want: []string{`webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots`}},
		"no client":    {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = nil }, want: []string{"webhooks[0].clientConfig: Required value: exactly one of url or service is required"}},
		"http url":     {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("http://example.com") }, want: []string{`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`}},
		"side effects": {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil }, want: []string{"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"}},
		"some effects": {change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, want: []string{`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`}},
		"timeout": {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) }, want: []string{"webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"}},
		"review versions": {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} },
			want: []string{`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`}},
		"operations": {change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "PATCH"}
		}, want: []string{`webhooks[0].rules[0].operations: Invalid value: ["*","PATCH"]: if '*' is present, must not specify other operations`,
			`webhooks[0].rules[0].operations[1]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`}},
		"resources": {change: func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Resources = []string{"*/*", "pods"} },
			want: []string{`webhooks[0].rules[0].resources: Invalid value: ["*/*","pods"]: if '*/*' is present, must not specify other resources`}},
		"match condition": {change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.metadata.name =="}}
		}, want: []string{"webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.metadata.name ==\n | .......................^"}},
		"selector": {change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}
		}, want: []string{`webhooks[0].namespaceSelector.matchLabels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := validHook()
			c.change(&h)
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
			defaultValidating(cfg)
			var got []string
			for _, e := range validateValidating(cfg, nil) {
				got = append(got, e.Error())
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// An update may keep what the stored object already had (kube's ratcheting), not add it.
func TestValidateWebhookConfigurationUpdateRatchets(t *testing.T) {
	old := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{validHook(), validHook()}}
	old.Webhooks[1].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown)
	next := old.DeepCopy()
	next.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	assert.Empty(t, validateValidating(next, old), "duplicate names and side effects Unknown were stored before")
	assert.Len(t, validateValidating(next, nil), 2, "a new configuration may have neither")
}

func TestDefaults(t *testing.T) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}}}}}
	defaultMutating(cfg)
	h := cfg.Webhooks[0]
	assert.Equal(t, admissionregistrationv1.Fail, *h.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Equivalent, *h.MatchPolicy)
	assert.Equal(t, admissionregistrationv1.NeverReinvocationPolicy, *h.ReinvocationPolicy)
	assert.Equal(t, int32(10), *h.TimeoutSeconds)
	assert.Equal(t, int32(443), *h.ClientConfig.Service.Port)
	assert.Equal(t, admissionregistrationv1.AllScopes, *h.Rules[0].Scope)
	assert.Equal(t, &metav1.LabelSelector{}, h.NamespaceSelector)
	assert.Equal(t, &metav1.LabelSelector{}, h.ObjectSelector)
}
