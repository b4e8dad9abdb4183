package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// Webhook admission with a real HTTPS webhook server and unmodified kubectl: deny, mutate,
// mutating before validating, namespace and object selectors, what a webhook receives,
// warnings, dry-run, a dead endpoint with Fail and with Ignore, a slow webhook cut at its
// timeoutSeconds, malformed answers, and custom resources (admitted by extensions).
func TestAdmissionWebhooks(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	wh := startWebhookServer(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		f := filepath.Join(dir, name+".yaml")
		writeFile(t, f, content)
		return f
	}
	configMap := func(name, ns string, labels ...string) string {
		return file("cm-"+ns+"-"+name, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {%s}}\ndata: {a: b}\n",
			name, ns, strings.Join(labels, ", ")))
	}
	// eventually waits (a configuration applies within a second) until kubectl args fail
	// with want (fail) or succeed with want in the output.
	eventually := func(fail bool, want string, args ...string) string {
		t.Helper()
		var out string
		require.Eventually(t, func() bool {
			var err error
			out, err = kubectl(t, k.kubeconfig, args...)
			return (err != nil) == fail && strings.Contains(out, want)
		}, 10*time.Second, 50*time.Millisecond, "kubectl %s: want %q (failing: %v); last:\n%s", strings.Join(args, " "), want, fail, &out)
		return out
	}

	k.run("create", "namespace", "adm")
	k.run("label", "namespace", "adm", "webhooks=on")
	k.run("create", "namespace", "plain")

	cm := `[{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`
	scoped := []string{`namespaceSelector: {matchLabels: {webhooks: "on"}}`, "objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}"}
	k.run("apply", "-f", file("mutating", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: a-mutate}\nwebhooks:\n"+
		webhookYAML("mutate.example.com", wh.url+"/mutate", wh.caBundle, cm, scoped...)))
	k.run("apply", "-f", file("validating", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: b-validate}\nwebhooks:\n"+
		webhookYAML("deny.example.com", wh.url+"/deny", wh.caBundle, cm, scoped...)+
		webhookYAML("require.example.com", wh.url+"/require-mutated", wh.caBundle, cm, scoped...)+
		webhookYAML("record.example.com", wh.url+"/allow", wh.caBundle, cm, scoped...)))

	t.Run("deny", func(t *testing.T) {
		out := eventually(true, `admission webhook "deny.example.com" denied the request: label deny is set`, "create", "-f", configMap("denied", "adm", "deny: \"true\""))
		// No code in the webhook's status: kube makes it a 400 without a reason.
		assert.Contains(t, out, "Error from server: error when creating", out)
		k.fails("get", "cm", "denied", "-n", "adm")
	})

	t.Run("mutating before validating, with warnings", func(t *testing.T) {
		out := k.run("create", "-f", configMap("m1", "adm"))
		assert.Contains(t, out, "Warning: mutated by the test webhook")
		assert.Contains(t, out, "Warning: deny webhook looked at m1")
		assert.Equal(t, "yes", k.run("get", "cm", "m1", "-n", "adm", "-o", "jsonpath={.metadata.labels.mutated}"))
		// What the validating webhook received is the mutated object.
		reviews := wh.received("/allow")
		require.NotEmpty(t, reviews)
		last := reviews[len(reviews)-1].Request
		var obj corev1.ConfigMap
		require.NoError(t, json.Unmarshal(last.Object.Raw, &obj))
		assert.Equal(t, "yes", obj.Labels["mutated"])
	})

	t.Run("selectors", func(t *testing.T) {
		before := len(wh.received("/mutate"))
		k.run("create", "-f", configMap("p1", "plain", "deny: \"true\""))
		assert.Empty(t, k.run("get", "cm", "p1", "-n", "plain", "-o", "jsonpath={.metadata.labels.mutated}"), "namespaceSelector")
		k.run("create", "-f", configMap("s1", "adm", "skip: \"yes\"", "deny: \"true\""))
		assert.Empty(t, k.run("get", "cm", "s1", "-n", "adm", "-o", "jsonpath={.metadata.labels.mutated}"), "objectSelector")
		assert.Equal(t, before, len(wh.received("/mutate")), "neither was sent to the webhook")
		// The namespace's labels decide at once.
		k.run("label", "namespace", "plain", "webhooks=on")
		eventually(true, "denied the request: label deny is set", "create", "-f", configMap("p2", "plain", "deny: \"true\""))
	})

	t.Run("what the webhook receives", func(t *testing.T) {
		k.run("create", "-f", configMap("r1", "adm"))
		k.run("label", "cm", "r1", "-n", "adm", "extra=1")
		k.run("create", "-f", configMap("dry", "adm"), "--dry-run=server")
		k.fails("get", "cm", "dry", "-n", "adm")
		byName := map[string][]*admissionv1.AdmissionRequest{}
		for _, r := range wh.received("/allow") {
			byName[r.Request.Name] = append(byName[r.Request.Name], r.Request)
		}
		require.Len(t, byName["r1"], 2)
		create, update := byName["r1"][0], byName["r1"][1]
		assert.NotEmpty(t, create.UID)
		assert.NotEqual(t, create.UID, update.UID)
		assert.Equal(t, "ConfigMap", create.Kind.Kind)
		assert.Equal(t, "v1", create.Kind.Version)
		assert.Equal(t, "configmaps", create.Resource.Resource)
		assert.Equal(t, create.Kind, *create.RequestKind)
		assert.Equal(t, create.Resource, *create.RequestResource)
		assert.Equal(t, "adm", create.Namespace)
		assert.Equal(t, admissionv1.Create, create.Operation)
		assert.Equal(t, admissionv1.Update, update.Operation)
		assert.Equal(t, "kubernetes-admin", create.UserInfo.Username)
		assert.Contains(t, create.UserInfo.Groups, "system:masters")
		assert.Nil(t, create.OldObject.Raw, "no old object on create")
		assert.NotNil(t, update.OldObject.Raw)
		assert.Contains(t, string(create.Options.Raw), `"kind":"CreateOptions"`)
		assert.Contains(t, string(update.Options.Raw), `"kind":"UpdateOptions"`)
		assert.Contains(t, string(create.Object.Raw), `{"kind":"ConfigMap","apiVersion":"v1",`)
		require.False(t, *create.DryRun)
		require.Len(t, byName["dry"], 1)
		assert.True(t, *byName["dry"][0].DryRun)
	})

	secrets := `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}]`
	inAdm := `namespaceSelector: {matchLabels: {webhooks: "on"}}`
	dead := deadURL(t)
	t.Run("dead endpoint: Fail, then Ignore", func(t *testing.T) {
		k.run("apply", "-f", file("dead", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: c-dead}\nwebhooks:\n"+
			webhookYAML("dead.example.com", dead+"/", wh.caBundle, secrets, inAdm, "failurePolicy: Fail")))
		out := eventually(true, `failed calling webhook "dead.example.com": failed to call webhook: Post "`+dead+`/?timeout=10s": dial tcp`,
			"create", "secret", "generic", "s1", "-n", "adm", "--from-literal=a=b")
		assert.Contains(t, out, "failed to create secret Internal error occurred: ")
		assert.Contains(t, out, "connection refused")
		// After repeated failures the webhook is not called for a while: same outcome, at once.
		eventually(true, `failed calling webhook "dead.example.com": not called: 5 calls in a row failed`,
			"create", "secret", "generic", "s2", "-n", "adm", "--from-literal=a=b")
		// Which webhook fails, and why, is in /readyz?verbose and /metrics.
		c.eventuallyBody("/readyz?verbose", 200, 10*time.Second,
			"[+]core/admission-webhooks ok (failing: ValidatingWebhookConfiguration/c-dead dead.example.com: ", "failed calls in a row, not called for now, last: ",
			"[+]extensions/admission-webhooks ok (no webhook failing)")
		c.eventuallyBody("/metrics", 200, 10*time.Second,
			`apichain_admission_webhook_paused{configuration="ValidatingWebhookConfiguration/c-dead",instance="core-`,
			// kube's webhook metrics: the failed calls rejected the requests (failurePolicy Fail)...
			`apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="dead.example.com",operation="CREATE",rejection_code="503",type="validating"}`,
			`apiserver_admission_webhook_admission_duration_seconds_count{name="dead.example.com",operation="CREATE",rejected="true",type="validating"}`,
			// ...the mutating webhook's calls let them through, the deny webhook's denials did not.
			`apiserver_admission_webhook_admission_duration_seconds_count{name="mutate.example.com",operation="CREATE",rejected="false",type="admit"}`,
			`apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny.example.com",operation="CREATE",rejection_code="400",type="validating"}`,
			// and kube's admission steps.
			`apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="true",type="validate"}`,
			`apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit"}`)
		k.run("patch", "validatingwebhookconfiguration", "c-dead", "--type=json", "-p", `[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`)
		eventually(false, "secret/s3 created", "create", "secret", "generic", "s3", "-n", "adm", "--from-literal=a=b")
		k.run("delete", "validatingwebhookconfiguration", "c-dead")
		c.eventuallyBody("/readyz?verbose", 200, 10*time.Second, "[+]core/admission-webhooks ok (no webhook failing)")
	})

	t.Run("slow webhook cut at timeoutSeconds", func(t *testing.T) {
		k.run("apply", "-f", file("slow", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: d-slow}\nwebhooks:\n"+
			webhookYAML("slow.example.com", wh.url+"/slow", wh.caBundle, secrets, inAdm, "timeoutSeconds: 1")))
		out := eventually(true, `failed calling webhook "slow.example.com": failed to call webhook: Post "`+wh.url+`/slow?timeout=1s": context deadline exceeded`,
			"create", "secret", "generic", "slow1", "-n", "adm", "--from-literal=a=b")
		assert.Contains(t, out, "Internal error occurred")
		k.run("delete", "validatingwebhookconfiguration", "d-slow")
	})

	t.Run("malformed answers", func(t *testing.T) {
		k.run("apply", "-f", file("malformed", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: e-malformed}\nwebhooks:\n"+
			webhookYAML("malformed.example.com", wh.url+"/malformed", wh.caBundle, secrets, inAdm)+
			webhookYAML("wrong-uid.example.com", wh.url+"/wrong-uid", wh.caBundle, secrets, inAdm)))
		out := eventually(true, `failed calling webhook "`, "create", "secret", "generic", "bad1", "-n", "adm", "--from-literal=a=b")
		// Both are called in parallel; either failure is the answer.
		assert.Regexp(t, `failed calling webhook "malformed.example.com": failed to call webhook: |failed calling webhook "wrong-uid.example.com": received invalid webhook response: expected response.uid=`, out)
		k.run("delete", "validatingwebhookconfiguration", "e-malformed")
		eventually(false, "created", "create", "secret", "generic", "bad1", "-n", "adm", "--from-literal=a=b")
	})

	t.Run("custom resources, admitted by extensions", func(t *testing.T) {
		k.run("create", "-f", file("crd", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`))
		waitEstablished(t, k.kubeconfig, "gadgets.example.com")
		k.run("apply", "-f", file("gadget-hooks", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: f-gadgets}\nwebhooks:\n"+
			webhookYAML("mutate-gadgets.example.com", wh.url+"/mutate", wh.caBundle, `[{operations: [CREATE], apiGroups: [example.com], apiVersions: ["*"], resources: [gadgets]}]`)))
		g := func(name string) string {
			return file("gadget-"+name, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: "+name+", namespace: adm}\n")
		}
		var out string
		require.Eventually(t, func() bool {
			name := fmt.Sprintf("g%d", time.Now().UnixNano())
			if _, err := kubectl(t, k.kubeconfig, "create", "-f", g(name)); err != nil {
				return false
			}
			out, _ = kubectl(t, k.kubeconfig, "get", "gadget", name, "-n", "adm", "-o", "jsonpath={.metadata.labels.mutated}")
			return out == "yes"
		}, 10*time.Second, 50*time.Millisecond, "a created gadget is mutated; last label: %q", &out)
	})
}

// ValidatingAdmissionPolicy with unmodified kubectl: a policy with a ConfigMap param, a
// messageExpression and a reason, bound with Deny in one namespace and with Warn in another;
// a policy that does not compile fails closed; a binding that finds no param denies.
func TestValidatingAdmissionPolicy(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	for _, ns := range []string{"vd", "vw", "vn"} {
		k.run("create", "namespace", ns)
		k.run("label", "namespace", ns, "vap="+ns)
	}
	k.run("create", "configmap", "limits", "-n", "vd", "--from-literal=maxReplicas=3")
	k.run("create", "configmap", "limits", "-n", "vw", "--from-literal=maxReplicas=3")
	policy := filepath.Join(dir, "policy.yaml")
	writeFile(t, policy, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be at most ' + params.data.maxReplicas"
    reason: Invalid
  - expression: "object.metadata.name.startsWith('ok-')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-deny}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, parameterNotFoundAction: Deny}
  matchResources: {namespaceSelector: {matchExpressions: [{key: vap, operator: In, values: [vd, vn]}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-warn}
spec:
  policyName: replica-limit
  validationActions: [Warn, Audit]
  paramRef: {name: limits, parameterNotFoundAction: Allow}
  matchResources: {namespaceSelector: {matchLabels: {vap: vw}}}
`)
	out := k.run("apply", "-f", policy)
	assert.Contains(t, out, "validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit created")
	out = k.run("get", "validatingadmissionpolicybindings")
	assert.Regexp(t, `(?m)^replica-limit-deny\s+replica-limit\s+\*/limits\s+\d+s$`, out)
	out = k.run("get", "validatingadmissionpolicies")
	assert.Regexp(t, `(?m)^replica-limit\s+2\s+v1/ConfigMap\s+\d+s$`, out)

	var got string
	require.Eventually(t, func() bool {
		got, _ = kubectl(t, k.kubeconfig, "create", "deployment", "big", "-n", "vd", "--image=nginx", "--replicas=5")
		return strings.Contains(got, "forbidden")
	}, 10*time.Second, 50*time.Millisecond, "the Deny binding applies; last:\n%s", &got)
	assert.Contains(t, got, `error: failed to create deployment: deployments.apps "big" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-deny' denied request: replicas must be at most 3`)
	k.run("create", "deployment", "ok-small", "-n", "vd", "--image=nginx", "--replicas=2")
	// Updates are checked too; the scale subresource is not (the rule names deployments, not
	// deployments/scale), as on kube.
	out = k.fails("patch", "deployment", "ok-small", "-n", "vd", "-p", `{"spec":{"replicas":4}}`)
	assert.Contains(t, out, "replicas must be at most 3")
	k.run("scale", "deployment", "ok-small", "-n", "vd", "--replicas=4")

	out = k.run("create", "deployment", "big", "-n", "vw", "--image=nginx", "--replicas=5")
	assert.Contains(t, out, "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-warn': replicas must be at most 3")
	assert.Contains(t, out, "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-warn': failed expression: object.metadata.name.startsWith('ok-')")
	assert.Contains(t, out, "deployment.apps/big created")

	// No param in vn: parameterNotFoundAction Deny.
	out = k.fails("create", "deployment", "ok-any", "-n", "vn", "--image=nginx")
	assert.Contains(t, out, "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-deny' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
	// Elsewhere nothing applies.
	k.run("create", "deployment", "big", "-n", "default", "--image=nginx", "--replicas=5")

	// A policy that cannot be created: kube's validation, with CEL's compile error.
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]}
  validations: [{expression: "object.nope("}]
`)
	out = k.fails("create", "-f", bad)
	assert.Contains(t, out, `The ValidatingAdmissionPolicy "bad" is invalid: spec.validations[0].expression: Invalid value: "object.nope(": compilation failed: ERROR: <input>:1:13: Syntax error`)
}
