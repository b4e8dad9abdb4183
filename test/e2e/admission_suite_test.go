package e2e

import (
	"strings"
	"testing"
)

// The admission and priority-and-fairness suite: kubectl and curl cases on webhooks (a real
// HTTPS webhook server on loopback; deny, mutate, ordering, selectors, what a webhook
// receives, dry-run and side effects, failures, codes, warnings, match conditions, the
// configurations' defaults and validation), ValidatingAdmissionPolicies (Deny and Warn
// bindings, messageExpression, params by name, validation), and API Priority and Fairness
// (bootstrap objects, response headers, a Dangling status, a flood rejected for one user
// while system:masters and another user are served, the debug dumps, metrics), run in order
// against a server started with --token-auth-file and default flags otherwise. Every
// expectation was checked against kube-apiserver 1.37.2 (APICHAIN_SUITE_KUBE).
func TestAdmissionSuite(t *testing.T) {
	runSuiteOnBoth(t, admissionSuiteCases(), 90, func(tg *suiteTarget) {
		tg.webhooks = startWebhookServer(tg.t)
		tg.vars["wh"], tg.vars["ca"], tg.vars["dead"] = tg.webhooks.url, tg.webhooks.caBundle, deadURL(tg.t)
	})
}

// suiteHook is one webhook calling path on the suite's webhook server.
func suiteHook(name, path, rules string, extra ...string) string {
	return webhookYAML(name, "{wh}"+path, "{ca}", rules, extra...)
}

func webhookConfig(kind, name string, hooks ...string) string {
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: " + kind + "WebhookConfiguration\nmetadata: {name: " + name + "}\nwebhooks:\n" +
		strings.Join(hooks, "")
}

func admissionSuiteCases() []suiteCase {
	alice, carol := "token:alice-token", "token:carol-token"
	const (
		cmRules     = `[{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`
		secretRules = `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}]`
		inAdm       = `namespaceSelector: {matchLabels: {webhooks: "on"}}`
		notSkipped  = "objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}"
		jsonHeader  = "Content-Type: application/json"
	)
	vwc := func(name string, hooks ...string) string { return webhookConfig("Validating", name, hooks...) }
	mwc := func(name string, hooks ...string) string { return webhookConfig("Mutating", name, hooks...) }
	secretHook := func(name, path string, extra ...string) string {
		return vwc(name, suiteHook(strings.TrimPrefix(name, "c-")+".example.com", path, secretRules, append([]string{inAdm}, extra...)...))
	}
	cm := func(name, ns, labels string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + ", labels: {" + labels + "}}\ndata: {a: b}\n"
	}
	apply := func(name, content string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: content, want: "created"}
	}
	invalid := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: content, fail: true, want: want}
	}
	createSecret := func(name string) []string {
		return []string{"create", "secret", "generic", name, "-n", "adm", "--from-literal=a=b"}
	}
	return []suiteCase{
		// Webhook configurations, and what a matching request meets.
		{name: "namespace adm", who: "admin", kubectl: []string{"create", "namespace", "adm"}, want: "namespace/adm created"},
		{name: "label adm", who: "admin", kubectl: []string{"label", "namespace", "adm", "webhooks=on"}, want: "namespace/adm labeled"},
		{name: "namespace plain", who: "admin", kubectl: []string{"create", "namespace", "plain"}, want: "namespace/plain created"},
		apply("mutating configuration", mwc("a-mutate", suiteHook("mutate.example.com", "/mutate", cmRules, inAdm, notSkipped))),
		apply("validating configuration", vwc("b-validate",
			suiteHook("deny.example.com", "/deny", cmRules, inAdm, notSkipped),
			suiteHook("require.example.com", "/require-mutated", cmRules, inAdm, notSkipped),
			suiteHook("record.example.com", "/allow", cmRules, inAdm, notSkipped))),
		{name: "mutating columns", who: "admin", kubectl: []string{"get", "mutatingwebhookconfigurations"}, want: `re:(?m)^a-mutate\s+1\s+\S+$`},
		{name: "validating columns", who: "admin", kubectl: []string{"get", "validatingwebhookconfiguration", "b-validate"}, want: `re:(?m)^b-validate\s+3\s+\S+$`},
		{name: "validating defaults", who: "admin", kubectl: []string{"get", "validatingwebhookconfiguration", "b-validate", "-o",
			"jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].matchPolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].rules[0].scope}"},
			want: "Fail Equivalent 10 *"},
		{name: "mutating defaults", who: "admin", kubectl: []string{"get", "mutatingwebhookconfiguration", "a-mutate", "-o",
			"jsonpath={.webhooks[0].reinvocationPolicy} {.webhooks[0].objectSelector.matchExpressions[0].operator}"}, want: "Never DoesNotExist"},
		{name: "denied", who: "admin", kubectl: []string{"create", "-f", "{file}", "--dry-run=server"}, file: cm("denied", "adm", "deny: \"true\""), fail: true, eventually: true,
			want: `admission webhook "deny.example.com" denied the request: label deny is set`},
		{name: "denied is not stored", who: "admin", kubectl: []string{"get", "configmap", "denied", "-n", "adm"}, fail: true, want: `configmaps "denied" not found`},
		{name: "mutated and admitted", who: "admin", kubectl: []string{"create", "configmap", "m1", "-n", "adm", "--from-literal=a=b"}, want: "configmap/m1 created"},
		{name: "mutating webhook warning", who: "admin", kubectl: []string{"create", "configmap", "m2", "-n", "adm"}, want: "Warning: mutated by the test webhook"},
		{name: "validating webhook warning", who: "admin", kubectl: []string{"create", "configmap", "m3", "-n", "adm"}, want: "Warning: deny webhook looked at m3"},
		{name: "mutation stored", who: "admin", kubectl: []string{"get", "configmap", "m1", "-n", "adm", "-o", "jsonpath={.metadata.labels.mutated}"}, want: "yes"},
		{name: "validation sees the mutation", received: "/allow", want: `"labels":{"mutated":"yes"}`},
		{name: "review operation", received: "/allow", want: `"operation":"CREATE"`},
		{name: "review kind", received: "/allow", want: `"kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"}`},
		{name: "review request kind", received: "/allow", want: `"requestKind":{"group":"","version":"v1","kind":"ConfigMap"},"requestResource":{"group":"","version":"v1","resource":"configmaps"}`},
		{name: "review name and namespace", received: "/allow", want: `"name":"m3","namespace":"adm"`},
		{name: "review create options", received: "/allow", want: `"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-create"`},
		{name: "review not dry-run", received: "/allow", want: `"dryRun":false`},
		// Not the edit ClusterRole: a bare kube-apiserver leaves its aggregated rules to kube-controller-manager.
		{name: "configmap writer role", who: "admin", kubectl: []string{"create", "role", "cm-writer", "-n", "adm", "--verb=create,get,list", "--resource=configmaps"},
			want: "role.rbac.authorization.k8s.io/cm-writer created"},
		{name: "alice may write configmaps in adm", who: "admin", kubectl: []string{"create", "rolebinding", "alice-cm", "-n", "adm", "--role=cm-writer", "--user=alice"},
			want: "rolebinding.rbac.authorization.k8s.io/alice-cm created"},
		{name: "alice creates", who: alice, kubectl: []string{"create", "configmap", "a1", "-n", "adm"}, eventually: true, want: "configmap/a1 created"},
		{name: "review user", received: "/allow", want: `"userInfo":{"username":"alice","uid":"1001","groups":["system:authenticated"]}`},
		{name: "update denied", who: "admin", kubectl: []string{"label", "configmap", "m1", "-n", "adm", "deny=true"}, fail: true,
			want: `admission webhook "deny.example.com" denied the request: label deny is set`},
		{name: "update review", received: "/deny", want: `"operation":"UPDATE"`},
		{name: "update review old object", received: "/deny", want: `"oldObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"m1"`},
		{name: "update allowed", who: "admin", kubectl: []string{"label", "configmap", "m1", "-n", "adm", "color=blue"}, want: "configmap/m1 labeled"},
		{name: "patch is reviewed as an update", received: "/allow", want: `"options":{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-label"}`},
		{name: "object selector", who: "admin", kubectl: []string{"create", "-f", "{file}"}, file: cm("skipped", "adm", "deny: \"true\", skip: \"1\""),
			want: "configmap/skipped created"},
		{name: "namespace selector", who: "admin", kubectl: []string{"create", "-f", "{file}"}, file: cm("elsewhere", "plain", "deny: \"true\""),
			want: "configmap/elsewhere created"},
		{name: "delete is not matched", who: "admin", kubectl: []string{"delete", "configmap", "m2", "-n", "adm"}, want: `configmap "m2" deleted`},

		// Dry-run and side effects.
		{name: "server dry-run", who: "admin", kubectl: []string{"create", "configmap", "d1", "-n", "adm", "--dry-run=server"}, want: "configmap/d1 created (server dry run)"},
		{name: "dry-run review", received: "/allow", want: `"dryRun":true`},
		{name: "dry-run stores nothing", who: "admin", kubectl: []string{"get", "configmap", "d1", "-n", "adm"}, fail: true, want: `configmaps "d1" not found`},
		{name: "dry-run mutated", who: "admin", kubectl: []string{"create", "configmap", "d2", "-n", "adm", "--dry-run=server", "-o", "jsonpath={.metadata.labels.mutated}"},
			want: "yes"},
		apply("side effects NoneOnDryRun", secretHook("c-sideeffects", "/allow", "sideEffects: NoneOnDryRun")),
		{name: "dry-run with NoneOnDryRun", who: "admin", kubectl: append(createSecret("s0"), "--dry-run=server"), eventually: true, want: "secret/s0 created (server dry run)"},
		{name: "NoneOnDryRun is called on dry-run", received: "/allow", want: `"name":"s0","namespace":"adm","operation":"CREATE"`},
		{name: "remove side effects", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-sideeffects"}, want: "deleted"},
		invalid("side effects Unknown", secretHook("c-bad", "/allow", "sideEffects: Unknown"),
			`webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"`),

		// Webhooks that fail.
		{name: "dead endpoint", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: vwc("c-dead", webhookYAML("dead.example.com", "{dead}/", "{ca}", secretRules, inAdm)), want: "created"},
		{name: "dead endpoint fails closed", who: "admin", kubectl: append(createSecret("s2"), "--dry-run=server"), fail: true, eventually: true,
			want: `Internal error occurred: failed calling webhook "dead.example.com": failed to call webhook: Post "{dead}/?timeout=10s": dial tcp`},
		{name: "dead endpoint Ignore", who: "admin", kubectl: []string{"patch", "validatingwebhookconfiguration", "c-dead", "--type=json",
			"-p", `[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`}, want: "patched"},
		{name: "dead endpoint fails open", who: "admin", kubectl: createSecret("s3"), eventually: true, want: "secret/s3 created"},
		{name: "remove dead", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-dead"}, want: "deleted"},
		apply("slow webhook", secretHook("c-slow", "/slow", "timeoutSeconds: 1")),
		{name: "slow webhook cut at its timeout", who: "admin", kubectl: append(createSecret("s4"), "--dry-run=server"), fail: true, eventually: true,
			want: `failed calling webhook "slow.example.com": failed to call webhook: Post "{wh}/slow?timeout=1s": context deadline exceeded`},
		{name: "remove slow", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-slow"}, want: "deleted"},
		apply("malformed answer", secretHook("c-malformed", "/malformed")),
		{name: "malformed answer fails", who: "admin", kubectl: append(createSecret("s5"), "--dry-run=server"), fail: true, eventually: true,
			want: `Internal error occurred: failed calling webhook "malformed.example.com": failed to call webhook: `},
		{name: "remove malformed", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-malformed"}, want: "deleted"},
		apply("answer for another request", secretHook("c-wronguid", "/wrong-uid")),
		{name: "wrong uid fails", who: "admin", kubectl: append(createSecret("s5"), "--dry-run=server"), fail: true, eventually: true,
			want: `failed calling webhook "wronguid.example.com": received invalid webhook response: expected response.uid=`},
		{name: "remove wrong uid", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-wronguid"}, want: "deleted"},
		apply("denial with a code", secretHook("c-code", "/deny-code")),
		{name: "denial keeps its code", who: "admin", curl: []string{"POST", "/api/v1/namespaces/adm/secrets?dryRun=All", "-H", jsonHeader, "-d", `{"metadata":{"name":"s6"}}`},
			code: 403, eventually: true, want: `"message": "admission webhook \"code.example.com\" denied the request: no way",
  "reason": "Forbidden"`},
		{name: "remove code", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-code"}, want: "deleted"},
		{name: "patch that cannot apply", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: mwc("c-badpatch", suiteHook("badpatch.example.com", "/bad-patch", secretRules, inAdm)), want: "created"},
		{name: "bad patch fails", who: "admin", kubectl: append(createSecret("s7"), "--dry-run=server"), fail: true, eventually: true, want: `Internal error occurred: `},
		{name: "remove bad patch", who: "admin", kubectl: []string{"delete", "mutatingwebhookconfiguration", "c-badpatch"}, want: "deleted"},
		apply("warning webhook", secretHook("c-warn", "/warn")),
		{name: "webhook warning", who: "admin", kubectl: createSecret("s8"), eventually: true, want: "Warning: careful with s8"},
		{name: "remove warn", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-warn"}, want: "deleted"},

		// Match conditions, scope, and the configurations' validation.
		apply("match conditions", vwc("c-mc", suiteHook("mc.example.com", "/deny-code", `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			`matchConditions: [{name: only-mc, expression: 'object.metadata.name.startsWith("mc-")'}]`))),
		{name: "matching condition", who: "admin", kubectl: []string{"create", "configmap", "mc-1", "-n", "plain", "--dry-run=server"}, fail: true, eventually: true,
			want: `admission webhook "mc.example.com" denied the request: no way`},
		{name: "condition not met", who: "admin", kubectl: []string{"create", "configmap", "other", "-n", "plain"}, want: "configmap/other created"},
		{name: "remove mc", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-mc"}, want: "deleted"},
		apply("cluster-scoped rule", vwc("c-ns", suiteHook("nsdeny.example.com", "/deny", `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [namespaces], scope: Cluster}]`))),
		{name: "namespace denied", who: "admin", kubectl: []string{"create", "-f", "{file}", "--dry-run=server"}, fail: true, eventually: true,
			file: "apiVersion: v1\nkind: Namespace\nmetadata: {name: nsdenied, labels: {deny: \"true\"}}\n", want: `admission webhook "nsdeny.example.com" denied the request: label deny is set`},
		{name: "namespaced scope", who: "admin", kubectl: []string{"patch", "validatingwebhookconfiguration", "c-ns", "--type=json",
			"-p", `[{"op":"replace","path":"/webhooks/0/rules/0/scope","value":"Namespaced"}]`}, want: "patched"},
		{name: "namespace not matched by Namespaced", who: "admin", kubectl: []string{"create", "-f", "{file}"}, eventually: true,
			file: "apiVersion: v1\nkind: Namespace\nmetadata: {name: nsdenied, labels: {deny: \"true\"}}\n", want: "namespace/nsdenied created"},
		{name: "remove ns", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-ns"}, want: "deleted"},
		invalid("condition that does not compile", vwc("c-bad", suiteHook("bad.example.com", "/allow", cmRules, `matchConditions: [{name: c, expression: 'object.metadata.name.startsWith('}]`)),
			`webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name.startsWith(": compilation failed: `),
		invalid("timeout too long", vwc("c-bad", suiteHook("bad.example.com", "/allow", cmRules, "timeoutSeconds: 31")),
			`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`),
		invalid("name without dots", vwc("c-bad", suiteHook("nodots", "/allow", cmRules)),
			`webhooks[0].name: Invalid value: "nodots": should be a domain with at least three segments separated by dots`),
		invalid("plain http", vwc("c-bad", webhookYAML("bad.example.com", "http://127.0.0.1:1/", "{ca}", cmRules)),
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`),
		invalid("duplicate names", vwc("c-bad", suiteHook("dup.example.com", "/allow", cmRules), suiteHook("dup.example.com", "/allow", cmRules)),
			`webhooks[1].name: Duplicate value: "dup.example.com"`),
		invalid("no review versions", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: c-bad}\nwebhooks:\n"+
			"- {name: bad.example.com, clientConfig: {url: \"https://127.0.0.1:1/\"}, sideEffects: None}\n",
			`webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1`),
		invalid("unknown failure policy", vwc("c-bad", suiteHook("bad.example.com", "/allow", cmRules, "failurePolicy: Maybe")),
			`webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`),

		// ValidatingAdmissionPolicy.
		{name: "namespace vap", who: "admin", kubectl: []string{"create", "namespace", "vap"}, want: "namespace/vap created"},
		{name: "label vap", who: "admin", kubectl: []string{"label", "namespace", "vap", "policy=on"}, want: "labeled"},
		apply("policy", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cm-keys}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations:
  - {expression: "!has(object.data) || size(object.data) <= 2", message: at most two keys}
  - expression: "object.metadata.name.size() < 10"
    messageExpression: "'name ' + object.metadata.name + ' is too long'"
`),
		apply("deny binding", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-keys-deny}
spec:
  policyName: cm-keys
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {policy: "on"}}}
`),
		{name: "policy columns", who: "admin", kubectl: []string{"get", "validatingadmissionpolicies"}, want: `re:(?m)^cm-keys\s+2\s+<unset>\s+\S+$`},
		{name: "binding columns", who: "admin", kubectl: []string{"get", "validatingadmissionpolicybindings"}, want: `re:(?m)^cm-keys-deny\s+cm-keys\s+<unset>\s+\S+$`},
		{name: "policy type checked", who: "admin", kubectl: []string{"get", "validatingadmissionpolicy", "cm-keys", "-o", "jsonpath={.status.observedGeneration} {.status.typeChecking}"},
			apichainOnly: true, eventually: true, want: "1 {}"},
		apply("policy with a typo", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations: [{expression: "object.spec.replicas > 0"}]
`),
		{name: "type checking warns", who: "admin", kubectl: []string{"get", "validatingadmissionpolicy", "typo", "-o",
			"jsonpath={.status.typeChecking.expressionWarnings[0].fieldRef}: {.status.typeChecking.expressionWarnings[0].warning}"},
			apichainOnly: true, eventually: true, want: "spec.validations[0].expression: /v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'"},
		{name: "remove typo", who: "admin", kubectl: []string{"delete", "validatingadmissionpolicy", "typo"}, want: "deleted"},
		{name: "policy denies", who: "admin", kubectl: []string{"create", "configmap", "big", "-n", "vap", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3", "--dry-run=server"},
			fail: true, eventually: true,
			want: `configmaps "big" is forbidden: ValidatingAdmissionPolicy 'cm-keys' with binding 'cm-keys-deny' denied request: at most two keys`},
		{name: "message expression", who: "admin", kubectl: []string{"create", "configmap", "averyverylongname", "-n", "vap"}, fail: true,
			want: `ValidatingAdmissionPolicy 'cm-keys' with binding 'cm-keys-deny' denied request: name averyverylongname is too long`},
		{name: "policy allows", who: "admin", kubectl: []string{"create", "configmap", "small", "-n", "vap", "--from-literal=a=1"}, want: "configmap/small created"},
		{name: "policy on update", who: "admin", kubectl: []string{"patch", "configmap", "small", "-n", "vap", "-p", `{"data":{"b":"2","c":"3"}}`}, fail: true,
			want: `denied request: at most two keys`},
		{name: "outside the binding", who: "admin", kubectl: []string{"create", "configmap", "big", "-n", "plain", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3"},
			want: "configmap/big created"},
		apply("warn binding", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-keys-warn}
spec:
  policyName: cm-keys
  validationActions: [Warn]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: plain}}}
`),
		{name: "policy warns on dry-run", who: "admin", kubectl: []string{"create", "configmap", "big2", "-n", "plain", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3", "--dry-run=server"},
			eventually: true, want: "Warning: Validation failed for ValidatingAdmissionPolicy 'cm-keys' with binding 'cm-keys-warn': at most two keys"},
		{name: "policy warns", who: "admin", kubectl: []string{"create", "configmap", "big2", "-n", "plain", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3"},
			want: "Warning: Validation failed for ValidatingAdmissionPolicy 'cm-keys' with binding 'cm-keys-warn': at most two keys"},
		{name: "warned object stored", who: "admin", kubectl: []string{"get", "configmap", "big2", "-n", "plain", "-o", "name"}, want: "configmap/big2"},
		{name: "namespace params", who: "admin", kubectl: []string{"create", "namespace", "withparams"}, want: "created"},
		{name: "param object", who: "admin", kubectl: []string{"create", "configmap", "limits", "-n", "withparams", "--from-literal=max=1"}, want: "configmap/limits created"},
		apply("policy with params", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations:
  - expression: "!has(object.data) || size(object.data) <= int(params.data.max)"
    messageExpression: "'at most ' + params.data.max + ' keys'"
`),
		apply("binding with params", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-keys-b}
spec:
  policyName: max-keys
  paramRef: {name: limits, namespace: withparams, parameterNotFoundAction: Deny}
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: withparams}}}
`),
		{name: "param kind column", who: "admin", kubectl: []string{"get", "validatingadmissionpolicy", "max-keys"}, want: `re:(?m)^max-keys\s+1\s+v1/ConfigMap\s+\S+$`},
		{name: "param ref column", who: "admin", kubectl: []string{"get", "validatingadmissionpolicybinding", "max-keys-b"},
			want: `re:(?m)^max-keys-b\s+max-keys\s+withparams/limits\s+\S+$`},
		{name: "params decide", who: "admin", kubectl: []string{"create", "configmap", "two", "-n", "withparams", "--from-literal=a=1", "--from-literal=b=2", "--dry-run=server"},
			fail: true, eventually: true, want: `ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-b' denied request: at most 1 keys`},
		{name: "params allow", who: "admin", kubectl: []string{"create", "configmap", "one", "-n", "withparams", "--from-literal=a=1"}, want: "configmap/one created"},
		{name: "remove the param", who: "admin", kubectl: []string{"delete", "configmap", "limits", "-n", "withparams"}, want: "deleted"},
		{name: "missing param denies", who: "admin", kubectl: []string{"create", "configmap", "three", "-n", "withparams", "--dry-run=server"}, fail: true, eventually: true,
			want: "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		invalid("policy that does not compile", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad}
spec:
  validations: [{expression: "object."}]
`, `spec.validations[0].expression: Invalid value: "object.": compilation failed: `),
		invalid("binding without actions", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad}
spec: {policyName: cm-keys}
`, `The ValidatingAdmissionPolicyBinding "bad" is invalid: spec.validationActions: Required value`),

		// MutatingAdmissionPolicy.
		{name: "namespace map", who: "admin", kubectl: []string{"create", "namespace", "mapns"}, want: "namespace/mapns created"},
		apply("apply-configuration policy", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: cm-label}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"mutated-by": "policy"}}}'
`),
		apply("apply-configuration binding", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: cm-label-b}
spec:
  policyName: cm-label
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: mapns}}}
`),
		{name: "mutating policy columns", who: "admin", kubectl: []string{"get", "mutatingadmissionpolicies"}, want: `re:(?m)^cm-label\s+1\s+<unset>\s+\S+$`},
		{name: "mutating binding columns", who: "admin", kubectl: []string{"get", "mutatingadmissionpolicybinding", "cm-label-b"}, want: `re:(?m)^cm-label-b\s+cm-label\s+<unset>\s+\S+$`},
		{name: "mutating policy defaults", who: "admin", kubectl: []string{"get", "mutatingadmissionpolicy", "cm-label", "-o",
			"jsonpath={.spec.failurePolicy} {.spec.matchConstraints.matchPolicy} {.spec.matchConstraints.resourceRules[0].scope}"}, want: "Fail Equivalent *"},
		{name: "apply configuration mutates", who: "admin", kubectl: []string{"create", "configmap", "p1", "-n", "mapns", "--dry-run=server", "-o", "jsonpath={.metadata.labels}"},
			eventually: true, want: `{"mutated-by":"policy"}`},
		{name: "mutation stored", who: "admin", kubectl: []string{"create", "configmap", "p2", "-n", "mapns", "-o", "jsonpath={.metadata.labels.mutated-by}"}, want: "policy"},
		{name: "outside the mutating binding", who: "admin", kubectl: []string{"create", "configmap", "p3", "-n", "plain", "-o", "jsonpath={.metadata.labels}"}, want: ""},
		apply("json-patch policy with params", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: cm-patch}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  matchConditions: [{name: has-data, expression: "has(object.data)"}]
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/data/owner", value: params.data.owner}]'
`),
		{name: "patch param", who: "admin", kubectl: []string{"create", "configmap", "owner", "-n", "mapns", "--from-literal=owner=team-a"}, want: "configmap/owner created"},
		apply("json-patch binding", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: cm-patch-b}
spec:
  policyName: cm-patch
  paramRef: {name: owner, namespace: mapns, parameterNotFoundAction: Deny}
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: mapns}}}
`),
		{name: "json patch mutates", who: "admin", kubectl: []string{"create", "configmap", "p4", "-n", "mapns", "--from-literal=a=b", "--dry-run=server", "-o", "jsonpath={.data.owner}"},
			eventually: true, want: "team-a"},
		{name: "match condition skips", who: "admin", kubectl: []string{"create", "configmap", "p5", "-n", "mapns", "--dry-run=server", "-o", "jsonpath={.data}"}, want: ""},
		{name: "both policies", who: "admin", kubectl: []string{"create", "configmap", "p6", "-n", "mapns", "--from-literal=a=b", "-o", "jsonpath={.metadata.labels.mutated-by} {.data.owner}"},
			want: "policy team-a"},
		{name: "remove the patch param", who: "admin", kubectl: []string{"delete", "configmap", "owner", "-n", "mapns"}, want: "deleted"},
		{name: "missing param denies the mutation", who: "admin", kubectl: []string{"create", "configmap", "p7", "-n", "mapns", "--from-literal=a=b", "--dry-run=server"}, fail: true,
			eventually: true, want: "policy 'cm-patch' with binding 'cm-patch-b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		invalid("mutation that does not compile", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  reinvocationPolicy: Never
  mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{"}}]
`, `spec.mutations[0].applyConfiguration.expression: Invalid value: "Object{": compilation failed: `),
		invalid("deletes cannot be mutated", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  reinvocationPolicy: Never
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]
`, `spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`),
		invalid("a patch must be typed", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  reinvocationPolicy: Never
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]
`, `spec.mutations[0].jsonPatch.expression: Invalid value: "[]": must evaluate to list(JSONPatch) but got list(dyn)`),
		invalid("reinvocation policy required", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]
`, `spec.reinvocationPolicy: Required value`),
		invalid("no mutations", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  reinvocationPolicy: Never
`, `spec.mutations: Required value: mutations must contain at least one item`),
		{name: "remove mutating policies", who: "admin", kubectl: []string{"delete", "mutatingadmissionpolicy", "cm-label", "cm-patch"}, want: "deleted"},

		// The ServiceAccount admission plugin. A bare kube-apiserver has no controller to make
		// the default account, so it is applied here (apichain's core has made it already).
		{name: "namespace pods", who: "admin", kubectl: []string{"create", "namespace", "pods"}, want: "namespace/pods created"},
		{name: "default service account", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: pods}\n", want: "serviceaccount/default"},
		{name: "pod gets the default account", who: "admin", kubectl: []string{"run", "p1", "-n", "pods", "--image=nginx"}, want: "pod/p1 created"},
		{name: "token volume mounted", who: "admin", kubectl: []string{"get", "pod", "p1", "-n", "pods", "-o",
			"jsonpath={.spec.serviceAccountName} {.spec.serviceAccount} {.spec.volumes[0].name} {.spec.containers[0].volumeMounts[0].mountPath} {.spec.containers[0].volumeMounts[0].readOnly}"},
			want: `re:^default default kube-api-access-[a-z0-9]{5} /var/run/secrets/kubernetes.io/serviceaccount true$`},
		{name: "token volume sources", who: "admin", kubectl: []string{"get", "pod", "p1", "-n", "pods", "-o",
			"jsonpath={.spec.volumes[0].projected.defaultMode} {.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds} {.spec.volumes[0].projected.sources[0].serviceAccountToken.path} {.spec.volumes[0].projected.sources[1].configMap.name} {.spec.volumes[0].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath}"},
			want: "420 3607 token kube-root-ca.crt metadata.namespace"},
		{name: "no automount", who: "admin", kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.spec.serviceAccountName}:{.spec.volumes}"},
			file: "apiVersion: v1\nkind: Pod\nmetadata: {name: p2, namespace: pods}\nspec: {automountServiceAccountToken: false, containers: [{name: c, image: nginx}]}\n", want: "default:"},
		{name: "unknown service account", who: "admin", kubectl: []string{"run", "p3", "-n", "pods", "--image=nginx", "--overrides", `{"spec":{"serviceAccountName":"nope"}}`},
			fail: true, want: `pods "p3" is forbidden: error looking up service account pods/nope: serviceaccount "nope" not found`},
		{name: "image pull secrets from the account", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: puller, namespace: pods}\nimagePullSecrets: [{name: registry-key}]\n", want: "serviceaccount/puller created"},
		{name: "pod gets the pull secret", who: "admin", kubectl: []string{"run", "p4", "-n", "pods", "--image=nginx", "--overrides", `{"spec":{"serviceAccountName":"puller"}}`,
			"--dry-run=server", "-o", "jsonpath={.spec.imagePullSecrets[0].name}"}, want: "registry-key"},
		{name: "every namespace gets a default account", who: "admin", kubectl: []string{"get", "serviceaccount", "default", "-n", "vap", "-o", "name"},
			apichainOnly: true, eventually: true, want: "serviceaccount/default"},
		{name: "every namespace gets the root CA", who: "admin", kubectl: []string{"get", "configmap", "kube-root-ca.crt", "-n", "vap", "-o", "jsonpath={.data.ca\\.crt}"},
			apichainOnly: true, eventually: true, want: "-----BEGIN CERTIFICATE-----"},

		// PriorityClasses and the Priority admission plugin.
		{name: "system priority classes", who: "admin", kubectl: []string{"get", "priorityclasses"},
			want: `re:(?m)^NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\s+PREEMPTIONPOLICY\nsystem-cluster-critical\s+2000000000\s+false\s+\S+\s+PreemptLowerPriority\nsystem-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority$`},
		{name: "system class description", who: "admin", kubectl: []string{"get", "pc", "system-node-critical", "-o", "jsonpath={.description} {.metadata.generation}"},
			want: "Used for system critical pods that must not be moved from their current node. 1"},
		{name: "system classes stay", who: "admin", kubectl: []string{"delete", "pc", "system-node-critical"}, fail: true,
			want: `priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`},
		{name: "system prefix reserved", who: "admin", kubectl: []string{"create", "priorityclass", "system-foo", "--value=5"}, fail: true,
			want: `metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-foo is not a known system priority class`},
		{name: "user priority limit", who: "admin", kubectl: []string{"create", "priorityclass", "big", "--value=1000000001"}, fail: true,
			want: `value: Forbidden: maximum allowed value of a user defined priority is 1000000000`},
		{name: "a global default", who: "admin", kubectl: []string{"create", "priorityclass", "d1", "--value=5", "--global-default"}, want: "priorityclass.scheduling.k8s.io/d1 created"},
		{name: "one global default", who: "admin", kubectl: []string{"create", "priorityclass", "d2", "--value=6", "--global-default"}, fail: true,
			want: `priorityclasses.scheduling.k8s.io "d2" is forbidden: PriorityClass d1 is already marked as default. Only one default can exist`},
		{name: "value is immutable", who: "admin", kubectl: []string{"patch", "pc", "d1", "-p", `{"value":7}`}, fail: true,
			want: `The PriorityClass "d1" is invalid: value: Forbidden: may not be changed in an update.`},
		{name: "the default applies", who: "admin", kubectl: []string{"run", "prio1", "-n", "pods", "--image=nginx", "--dry-run=server", "-o", "jsonpath={.spec.priority}"},
			eventually: true, want: "5"},
		{name: "pod gets the default priority", who: "admin", kubectl: []string{"run", "prio1", "-n", "pods", "--image=nginx"}, want: "pod/prio1 created"},
		{name: "default priority read back", who: "admin", kubectl: []string{"get", "pod", "prio1", "-n", "pods", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy} {.spec.priorityClassName}"},
			want: "5 PreemptLowerPriority d1"},
		{name: "unknown priority class", who: "admin", kubectl: []string{"run", "prio2", "-n", "pods", "--image=nginx", "--overrides", `{"spec":{"priorityClassName":"nope"}}`},
			fail: true, want: `pods "prio2" is forbidden: no PriorityClass with name nope was found`},
		{name: "a priority of its own", who: "admin", kubectl: []string{"run", "prio3", "-n", "pods", "--image=nginx", "--overrides", `{"spec":{"priority":9}}`},
			fail: true, want: `pods "prio3" is forbidden: the integer value of priority (9) must not be provided in pod spec; priority admission controller computed 5 from the given PriorityClass name`},
		{name: "remove the default", who: "admin", kubectl: []string{"delete", "pc", "d1"}, want: `priorityclass.scheduling.k8s.io "d1" deleted`},
		{name: "no default, priority 0", who: "admin", kubectl: []string{"run", "prio4", "-n", "pods", "--image=nginx", "--dry-run=server", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}"},
			eventually: true, want: "0 PreemptLowerPriority"},

		// LimitRange and the LimitRanger admission plugin.
		{name: "namespace limits", who: "admin", kubectl: []string{"create", "namespace", "limits"}, want: "namespace/limits created"},
		{name: "default service account in limits", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: limits}\n", want: "serviceaccount/default"},
		apply("limit range", `apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: limits}
spec:
  limits:
  - type: Container
    max: {cpu: "1", memory: 1Gi}
    min: {cpu: 50m}
    default: {cpu: 500m}
    defaultRequest: {cpu: 100m, memory: 64Mi}
  - type: Pod
    max: {cpu: "2"}
`),
		{name: "limit range defaults", who: "admin", kubectl: []string{"get", "limitrange", "lr", "-n", "limits", "-o", "jsonpath={.spec.limits[0].default} {.spec.limits[0].defaultRequest} {.spec.limits[1].default}"},
			want: `{"cpu":"500m","memory":"1Gi"} {"cpu":"100m","memory":"64Mi"} `},
		{name: "limit range columns", who: "admin", kubectl: []string{"get", "limits", "-n", "limits"}, want: `re:(?m)^NAME\s+CREATED AT\nlr\s+\d{4}-\d\d-\d\dT`},
		{name: "pod gets the defaults", who: "admin", kubectl: []string{"run", "p1", "-n", "limits", "--image=nginx", "--dry-run=server", "-o",
			"jsonpath={.spec.containers[0].resources}"}, eventually: true,
			want: `{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"100m","memory":"64Mi"}}`},
		{name: "what the plugin set", who: "admin", kubectl: []string{"run", "p1", "-n", "limits", "--image=nginx", "--dry-run=server", "-o",
			`jsonpath={.metadata.annotations.kubernetes\.io/limit-ranger}`},
			want: "LimitRanger plugin set: cpu, memory request for container p1; cpu, memory limit for container p1"},
		{name: "over the maximum", who: "admin", kubectl: []string{"run", "big", "-n", "limits", "--image=nginx", "--overrides",
			`{"spec":{"containers":[{"name":"big","image":"nginx","resources":{"limits":{"cpu":"3"}}}]}}`}, fail: true,
			want: `pods "big" is forbidden: [maximum cpu usage per Container is 1, but limit is 3, maximum cpu usage per Pod is 2, but limit is 3]`},
		{name: "under the minimum", who: "admin", kubectl: []string{"run", "small", "-n", "limits", "--image=nginx", "--overrides",
			`{"spec":{"containers":[{"name":"small","image":"nginx","resources":{"requests":{"cpu":"10m"},"limits":{"cpu":"10m"}}}]}}`}, fail: true,
			want: `pods "small" is forbidden: minimum cpu usage per Container is 50m, but request is 10m`},
		{name: "within the range", who: "admin", kubectl: []string{"run", "fits", "-n", "limits", "--image=nginx"}, want: "pod/fits created"},
		invalid("min over max", `apiVersion: v1
kind: LimitRange
metadata: {name: bad, namespace: limits}
spec: {limits: [{type: Container, max: {cpu: "1"}, min: {cpu: "2"}}]}
`, `min value 2 is greater than max value 1`),
		invalid("pod ranges have no defaults", `apiVersion: v1
kind: LimitRange
metadata: {name: bad, namespace: limits}
spec: {limits: [{type: Pod, default: {cpu: "1"}}]}
`, "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"),
		invalid("unknown limit type", `apiVersion: v1
kind: LimitRange
metadata: {name: bad, namespace: limits}
spec: {limits: [{type: Node, max: {cpu: "1"}}]}
`, `spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified`),

		// ResourceQuota. A bare kube-apiserver has no controller to fill a quota's status, so
		// it is written here as the controller would (apichain's core keeps it itself).
		{name: "namespace quota", who: "admin", kubectl: []string{"create", "namespace", "quota"}, want: "namespace/quota created"},
		{name: "default service account in quota", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: quota}\n", want: "serviceaccount/default"},
		apply("a quota", `apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: quota}
spec:
  hard: {pods: "2", secrets: "2", requests.cpu: "1", limits.cpu: "2"}
`),
		{name: "quota status kept by core", who: "admin", kubectl: []string{"get", "quota", "q", "-n", "quota", "-o", "jsonpath={.status.hard.pods} {.status.used.pods}"},
			apichainOnly: true, eventually: true, want: "2 0"},
		{name: "quota status", who: "admin", kubectl: []string{"patch", "resourcequota", "q", "-n", "quota", "--subresource=status", "--type=merge", "-p",
			`{"status":{"hard":{"pods":"2","secrets":"2","requests.cpu":"1","limits.cpu":"2"},"used":{"pods":"0","secrets":"0","requests.cpu":"0","limits.cpu":"0"}}}`},
			want: "resourcequota/q patched"},
		{name: "quota columns", who: "admin", kubectl: []string{"get", "quota", "-n", "quota"},
			want: `re:(?m)^NAME\s+REQUEST\s+LIMIT\s+AGE\nq\s+pods: 0/2, requests.cpu: 0/1, secrets: 0/2\s+limits.cpu: 0/2\s+\S+$`},
		{name: "quota needs requests", who: "admin", kubectl: []string{"run", "p0", "-n", "quota", "--image=nginx"}, fail: true,
			want: `pods "p0" is forbidden: failed quota: q: must specify limits.cpu for: p0; requests.cpu for: p0`},
		{name: "first secret", who: "admin", kubectl: []string{"create", "secret", "generic", "s1", "-n", "quota"}, want: "secret/s1 created"},
		{name: "second secret", who: "admin", kubectl: []string{"create", "secret", "generic", "s2", "-n", "quota"}, want: "secret/s2 created"},
		{name: "third secret exceeds", who: "admin", kubectl: []string{"create", "secret", "generic", "s3", "-n", "quota"}, fail: true,
			want: `secrets "s3" is forbidden: exceeded quota: q, requested: secrets=1, used: secrets=2, limited: secrets=2`},
		{name: "a pod within quota", who: "admin", kubectl: []string{"run", "p1", "-n", "quota", "--image=nginx", "--overrides",
			`{"spec":{"containers":[{"name":"p1","image":"nginx","resources":{"requests":{"cpu":"600m"},"limits":{"cpu":"1"}}}]}}`}, want: "pod/p1 created"},
		{name: "a pod over quota", who: "admin", kubectl: []string{"run", "p2", "-n", "quota", "--image=nginx", "--overrides",
			`{"spec":{"containers":[{"name":"p2","image":"nginx","resources":{"requests":{"cpu":"600m"},"limits":{"cpu":"1"}}}]}}`}, fail: true,
			want: `pods "p2" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1`},
		{name: "dry run charges nothing", who: "admin", kubectl: []string{"run", "p3", "-n", "quota", "--image=nginx", "--dry-run=server", "--overrides",
			`{"spec":{"containers":[{"name":"p3","image":"nginx","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"100m"}}}]}}`}, want: "pod/p3 created (server dry run)"},
		{name: "usage charged", who: "admin", kubectl: []string{"get", "quota", "q", "-n", "quota"}, eventually: true,
			want: `re:(?m)^q\s+pods: 1/2, requests.cpu: 600m/1, secrets: 2/2\s+limits.cpu: 1/2\s+\S+$`},
		{name: "deleting a secret", who: "admin", kubectl: []string{"delete", "secret", "s1", "-n", "quota"}, want: `secret "s1" deleted`},
		{name: "deleted usage released", who: "admin", kubectl: []string{"get", "quota", "q", "-n", "quota", "-o", "jsonpath={.status.used.secrets}"},
			apichainOnly: true, eventually: true, want: "1"},
		invalid("negative quota", `apiVersion: v1
kind: ResourceQuota
metadata: {name: bad, namespace: quota}
spec: {hard: {pods: "-1"}}
`, `spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`),
		invalid("fractional count", `apiVersion: v1
kind: ResourceQuota
metadata: {name: bad, namespace: quota}
spec: {hard: {secrets: 1500m}}
`, `spec.hard[secrets]: Invalid value: "1500m": must be an integer`),
		invalid("unknown quota resource", `apiVersion: v1
kind: ResourceQuota
metadata: {name: bad, namespace: quota}
spec: {hard: {foo: "1"}}
`, `spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota`),
		invalid("conflicting scopes", `apiVersion: v1
kind: ResourceQuota
metadata: {name: bad, namespace: quota}
spec: {hard: {pods: "1"}, scopes: [BestEffort, NotBestEffort]}
`, `conflicting scopes`),

		// PodSecurity.
		{name: "namespace psa", who: "admin", kubectl: []string{"create", "namespace", "psa"}, want: "namespace/psa created"},
		{name: "restricted namespace", who: "admin", kubectl: []string{"label", "namespace", "psa", "pod-security.kubernetes.io/enforce=restricted"}, want: "namespace/psa labeled"},
		{name: "default service account in psa", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: psa}\n", want: "serviceaccount/default"},
		{name: "restricted refuses", who: "admin", kubectl: []string{"run", "p", "-n", "psa", "--image=nginx"}, fail: true,
			want: `pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "p" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "p" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "p" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "p" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{name: "restricted admits a compliant pod", who: "admin", kubectl: []string{"run", "ok", "-n", "psa", "--image=nginx", "--overrides", `{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":1000,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"ok","image":"nginx","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}`}, want: "pod/ok created"},
		{name: "controllers are warned", who: "admin", kubectl: []string{"create", "deployment", "d", "-n", "psa", "--image=nginx"},
			want: `Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false)`},
		{name: "raising enforce warns about existing pods", who: "admin", kubectl: []string{"label", "namespace", "quota", "pod-security.kubernetes.io/enforce=restricted"},
			want: `Warning: existing pods in namespace "quota" violate the new PodSecurity enforce level "restricted:latest"`},
		{name: "warn mode", who: "admin", kubectl: []string{"label", "namespace", "limits", "pod-security.kubernetes.io/warn=baseline"}, want: "namespace/limits labeled"},
		{name: "warned host network pod", who: "admin", kubectl: []string{"run", "hostnet", "-n", "limits", "--image=nginx", "--overrides",
			`{"spec":{"hostNetwork":true}}`},
			want: `Warning: would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`},
		{name: "bad level", who: "admin", kubectl: []string{"label", "namespace", "psa", "pod-security.kubernetes.io/enforce=bogus", "--overwrite"}, fail: true,
			want: `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, baseline, restricted`},

		// NamespaceLifecycle.
		{name: "no such namespace", who: "admin", kubectl: []string{"create", "configmap", "c", "-n", "nope"}, fail: true,
			want: `namespaces "nope" not found`},
		{name: "immortal namespace", who: "admin", kubectl: []string{"delete", "namespace", "kube-system"}, fail: true,
			want: `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
		{name: "a namespace with a finalizer", who: "admin", kubectl: []string{"create", "-f", "{file}"},
			file: "apiVersion: v1\nkind: Namespace\nmetadata: {name: ending}\n", want: "namespace/ending created"},
		{name: "held content", who: "admin", kubectl: []string{"create", "-f", "{file}"},
			file: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: ending, finalizers: [example.com/hold]}\n", want: "configmap/held created"},
		{name: "ending the namespace", who: "admin", kubectl: []string{"delete", "namespace", "ending", "--wait=false"}, want: `namespace "ending" deleted`},
		{name: "no new content while terminating", who: "admin", kubectl: []string{"create", "configmap", "late", "-n", "ending"}, fail: true, eventually: true,
			want: `configmaps "late" is forbidden: unable to create new content in namespace ending because it is being terminated`},
		{name: "release the content", who: "admin", kubectl: []string{"patch", "configmap", "held", "-n", "ending", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`},
			want: "configmap/held patched"},

		// API Priority and Fairness.
		{name: "bootstrap flow schemas", who: "admin", kubectl: []string{"get", "flowschemas"}, eventually: true,
			want: `re:(?m)^global-default\s+global-default\s+9900\s+ByUser\s+\S+\s+False$`},
		{name: "exempt flow schema", who: "admin", kubectl: []string{"get", "flowschema", "exempt"}, want: `re:(?m)^exempt\s+exempt\s+1\s+<none>\s+\S+\s+False$`},
		{name: "bootstrap priority levels", who: "admin", kubectl: []string{"get", "prioritylevelconfigurations"},
			want: `re:(?m)^global-default\s+Limited\s+20\s+128\s+6\s+50\s+\S+$`},
		{name: "exempt priority level", who: "admin", kubectl: []string{"get", "prioritylevelconfiguration", "exempt"}, want: `re:(?m)^exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>\s+\S+$`},
		{name: "exempt uid", who: "admin", kubectl: []string{"get", "flowschema", "exempt", "-o", "jsonpath={.metadata.uid}"}, save: "exemptuid", want: "-"},
		{name: "global-default uid", who: "admin", kubectl: []string{"get", "flowschema", "global-default", "-o", "jsonpath={.metadata.uid}"}, save: "globaluid", want: "-"},
		{name: "masters are exempt", who: "admin", curl: []string{"GET", "/api", "-D", "-"}, code: 200, want: "x-kubernetes-pf-flowschema-uid: {exemptuid}"},
		{name: "users are global-default", who: alice, curl: []string{"GET", "/api", "-D", "-"}, code: 200, want: "x-kubernetes-pf-flowschema-uid: {globaluid}"},
		apply("a small level and a flow for carol", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flooder}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: tiny}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: carol}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`),
		{name: "tiny defaults", who: "admin", kubectl: []string{"get", "prioritylevelconfiguration", "tiny"}, want: `re:(?m)^tiny\s+Limited\s+1\s+<none>\s+<none>\s+<none>\s+\S+$`},
		{name: "flooder uid", who: "admin", kubectl: []string{"get", "flowschema", "flooder", "-o", "jsonpath={.metadata.uid}"}, save: "flooderuid", want: "-"},
		{name: "carol is classified", who: carol, curl: []string{"GET", "/api", "-D", "-"}, code: 200, eventually: true, want: "x-kubernetes-pf-flowschema-uid: {flooderuid}"},
		apply("a flow schema without its level", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: dangling}
spec:
  matchingPrecedence: 600
  priorityLevelConfiguration: {name: nope}
  rules: [{subjects: [{kind: User, user: {name: nobody}}], nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]}]
`),
		{name: "dangling condition", who: "admin", kubectl: []string{"get", "flowschema", "dangling", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].status} {.status.conditions[0].reason}: {.status.conditions[0].message}"},
			eventually: true, want: `Dangling=True NotFound: This FlowSchema references the PriorityLevelConfiguration object named "nope" but there is no such object`},
		{name: "dangling column", who: "admin", kubectl: []string{"get", "flowschema", "dangling"}, want: `re:(?m)^dangling\s+nope\s+600\s+<none>\s+\S+\s+True$`},
		{name: "namespace slow", who: "admin", kubectl: []string{"create", "namespace", "slow"}, want: "created"},
		{name: "label slow", who: "admin", kubectl: []string{"label", "namespace", "slow", "slow=yes"}, want: "labeled"},
		{name: "configmap writer role in slow", who: "admin", kubectl: []string{"create", "role", "cm-writer", "-n", "slow", "--verb=create,get,list", "--resource=configmaps"}, want: "created"},
		{name: "carol may write configmaps in slow", who: "admin", kubectl: []string{"create", "rolebinding", "carol-cm", "-n", "slow", "--role=cm-writer", "--user=carol"}, want: "created"},
		apply("a webhook that holds requests", vwc("c-held", suiteHook("held.example.com", "/slow", `[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			`namespaceSelector: {matchLabels: {slow: "yes"}}`, "timeoutSeconds: 5", "failurePolicy: Ignore"))),
		{name: "held webhook in force", who: "admin", kubectl: []string{"create", "configmap", "probe", "-n", "slow"}, want: "configmap/probe created"},
		{name: "held webhook was called", received: "/slow", want: `"name":"probe"`},
		{name: "flood", who: carol, background: 8, curl: []string{"POST", "/api/v1/namespaces/slow/configmaps", "-H", jsonHeader,
			"-d", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"flood-"}}`}},
		{name: "tiny is busy", who: "admin", curl: []string{"GET", "/debug/api_priority_and_fairness/dump_priority_levels"}, code: 200, eventually: true,
			want: `re:(?m)^tiny,\s*\d+,\s*\w+,\s*\w+,\s*\d+,\s*[1-9]`},
		{name: "the flooder is rejected", who: carol, curl: []string{"GET", "/api", "-D", "-"}, code: 429,
			want: `re:(?s)retry-after: [1-9][0-9]*\r\n.*Too many requests, please try again later\.`},
		{name: "masters are served", who: "admin", curl: []string{"GET", "/api/v1/namespaces/slow/configmaps"}, code: 200, want: `"kind": "ConfigMapList"`},
		{name: "another user is served", who: alice, curl: []string{"GET", "/api"}, code: 200, want: `"kind": "APIVersions"`},
		{name: "another user's writes are served", who: alice, kubectl: []string{"create", "configmap", "during-flood", "-n", "adm"}, want: "configmap/during-flood created"},
		{name: "the flood's outcome", await: "flood", want: `re:^(201\n)+429(\n429)*$`},
		{name: "rejections in the dump", who: "admin", curl: []string{"GET", "/debug/api_priority_and_fairness/dump_priority_levels"}, code: 200,
			want: `re:(?m)^tiny,(\s*\S+,){6}\s*[1-9]`},
		{name: "rejections in the metrics", who: "admin", curl: []string{"GET", "/metrics"}, code: 200,
			want: `apiserver_flowcontrol_rejected_requests_total{flow_schema="flooder",priority_level="tiny",reason="concurrency-limit"}`},
		{name: "queues dump", who: "admin", curl: []string{"GET", "/debug/api_priority_and_fairness/dump_queues"}, code: 200, want: "PriorityLevelName"},
		{name: "dumps need authorization", who: alice, curl: []string{"GET", "/debug/api_priority_and_fairness/dump_requests"}, code: 403,
			want: `cannot get path \"/debug/api_priority_and_fairness/dump_requests\"`},
		{name: "remove held", who: "admin", kubectl: []string{"delete", "validatingwebhookconfiguration", "c-held"}, want: "deleted"},
		invalid("negative shares", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: bad}
spec: {type: Limited, limited: {nominalConcurrencyShares: -1, limitResponse: {type: Reject}}}
`, `spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer`),
		invalid("precedence out of range", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: bad}
spec:
  matchingPrecedence: 20000
  priorityLevelConfiguration: {name: tiny}
`, `spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`),
	}
}
