package e2e

import (
	"path/filepath"
	"testing"
)

// The aggregated API suite: kubectl cases on the real sample-apiserver registered as two
// APIServices (discovery, availability, CRUD of flunders and fischers with every patch type,
// server-side apply, dry run, watch, selectors, the server's own validation and admission, RBAC
// checked by both servers, OpenAPI, explain, namespace deletion). On apichain it is registered
// with a headless Service and an EndpointSlice naming a host under localhost, with apichain's
// default flags; kube-apiserver (APICHAIN_SUITE_KUBE) reaches a server on loopback only through
// an ExternalName Service, so there it is registered with one of those.
func TestSampleAPIServerSuite(t *testing.T) {
	runSuiteOnBoth(t, sampleSuiteCases(), 20, func(tg *suiteTarget) {
		s := startSampleAPIServer(tg.t, tg.server, tg.caFile, tg.adminKubeconfig)
		registration := s.registration()
		if tg.kube {
			registration = s.externalNameRegistration()
		}
		path := filepath.Join(tg.dir, "registration.yaml")
		writeFile(tg.t, path, registration)
		out, err := kubectl(tg.t, tg.adminKubeconfig, "apply", "-f", path)
		if err != nil {
			tg.t.Fatalf("registering the sample-apiserver: %v\n%s", err, out)
		}
	})
}

func flunder(name, extra string) string {
	return "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: " + name + ", namespace: flunders, labels: {tier: " + name + "}}\n" + extra
}

func sampleSuiteCases() []suiteCase {
	a, alice := "admin", "token:alice-token"
	k := func(args ...string) []string { return args }
	kn := func(args ...string) []string { return append(args, "-n", "flunders") }
	return []suiteCase{
		{name: "available", who: a, kubectl: k("wait", "--for=condition=Available", "--timeout=30s", "apiservice/v1alpha1.wardle.example.com", "apiservice/v1beta1.wardle.example.com"),
			want: "apiservice.apiregistration.k8s.io/v1beta1.wardle.example.com condition met"},
		{name: "apiservice columns", who: a, kubectl: k("get", "apiservice", "v1alpha1.wardle.example.com"),
			want: `re:(?m)^v1alpha1.wardle.example.com\s+wardle/api\s+True\s+\S+$`},
		{name: "apiservice condition", who: a, kubectl: k("get", "apiservice", "v1alpha1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].reason}: {.status.conditions[?(@.type=="Available")].message}`),
			want: "Passed: all checks passed"},
		{name: "resources in discovery", who: a, kubectl: k("api-resources", "--api-group=wardle.example.com"), eventually: true,
			want: "re:(?m)^fischers\\s+wardle.example.com/v1alpha1\\s+false\\s+Fischer\\nflunders\\s+wardle.example.com/v1alpha1\\s+true\\s+Flunder$"},
		{name: "group document", who: a, kubectl: k("get", "--raw", "/apis/wardle.example.com"),
			want: `"preferredVersion":{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}`},
		{name: "namespace", who: a, kubectl: k("create", "namespace", "flunders"), want: "namespace/flunders created"},
		{name: "create", who: a, file: flunder("f1", "spec: {reference: f0}"), kubectl: k("create", "-f", "{file}"), eventually: true,
			want: "flunder.wardle.example.com/f1 created"},
		{name: "deprecation warning", who: a, kubectl: kn("get", "flunder", "f1"),
			want: "Warning: wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+"},
		{name: "columns", who: a, kubectl: kn("get", "flunders"), want: "re:(?m)^NAME\\s+CREATED AT\\nf1\\s+\\S+Z$"},
		{name: "field", who: a, kubectl: kn("get", "flunder", "f1", "-o", "jsonpath={.spec.reference}"), want: "re:(?m)^f0$"},
		{name: "already exists", who: a, file: flunder("f1", ""), kubectl: k("create", "-f", "{file}"), fail: true,
			want: `Error from server (AlreadyExists): error when creating "`},
		{name: "invalid", who: a, file: "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata: {name: bad, namespace: flunders}\nspec: {flunderReference: a, fischerReference: b}\n",
			kubectl: k("create", "-f", "{file}"), fail: true,
			want: `The Flunder "bad" is invalid: spec.fischerReference: Invalid value: "b": cannot be set with flunderReference at the same time`},
		{name: "namespace must exist", who: a, file: "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: f9, namespace: ghost}\n",
			kubectl: k("create", "-f", "{file}"), fail: true, want: `namespaces "ghost" not found`},
		{name: "label selector", who: a, file: flunder("f2", ""), kubectl: k("apply", "-f", "{file}"), want: "flunder.wardle.example.com/f2 created"},
		{name: "selected", who: a, kubectl: kn("get", "flunders", "-l", "tier=f2", "-o", "name"), want: "re:(?m)^flunder.wardle.example.com/f2$"},
		{name: "field selector", who: a, kubectl: kn("get", "flunders", "--field-selector", "metadata.name=f1", "-o", "name"),
			want: "re:(?m)^flunder.wardle.example.com/f1$"},
		{name: "merge patch", who: a, kubectl: kn("patch", "flunder", "f1", "--type=merge", "-p", `{"spec":{"reference":"f2"}}`),
			want: "flunder.wardle.example.com/f1 patched"},
		{name: "json patch", who: a, kubectl: kn("patch", "flunder", "f1", "--type=json", "-p", `[{"op":"add","path":"/metadata/labels/extra","value":"yes"}]`),
			want: "flunder.wardle.example.com/f1 patched"},
		{name: "strategic merge patch", who: a, kubectl: kn("patch", "flunder", "f1", "-p", `{"metadata":{"annotations":{"note":"hi"}}}`),
			want: "flunder.wardle.example.com/f1 patched"},
		{name: "patched", who: a, kubectl: kn("get", "flunder", "f1", "-o", "jsonpath={.spec.reference} {.metadata.labels.extra} {.metadata.annotations.note}"),
			want: "re:(?m)^f2 yes hi$"},
		{name: "server-side apply", who: a, file: flunder("f3", "spec: {reference: f1}"), kubectl: k("apply", "--server-side", "-f", "{file}"),
			want: "flunder.wardle.example.com/f3 serverside-applied"},
		{name: "server-side apply owner", who: a, kubectl: kn("get", "flunder", "f3", "-o", "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}"),
			want: "re:(?m)^kubectl Apply$"},
		{name: "server-side apply conflict", who: a, file: flunder("f3", "spec: {reference: other}"), kubectl: k("apply", "--server-side", "--field-manager=other", "-f", "{file}"), fail: true,
			want: `Apply failed with 1 conflict: conflict with "kubectl": .spec.reference`},
		{name: "dry run", who: a, file: flunder("f4", ""), kubectl: k("create", "--dry-run=server", "-f", "{file}"),
			want: "flunder.wardle.example.com/f4 created (server dry run)"},
		{name: "dry run stored nothing", who: a, kubectl: kn("get", "flunder", "f4"), fail: true,
			want: `Error from server (NotFound): flunders.wardle.example.com "f4" not found`},
		{name: "other version", who: a, kubectl: kn("get", "flunders.v1beta1.wardle.example.com", "f1", "-o", "jsonpath={.apiVersion}"),
			want: "re:(?m)^wardle.example.com/v1beta1$"},
		{name: "watch", who: a, kubectl: kn("get", "flunders", "-w", "--output-watch-events", "--request-timeout=2s"),
			want: "re:(?m)^EVENT\\s+NAME\\s+CREATED AT\\nADDED\\s+f1\\s+\\S+$"},
		{name: "cluster-scoped fischer", who: a, file: "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata: {name: no-bad}\ndisallowedFlunders: [banned]\n",
			kubectl: k("create", "-f", "{file}"), want: "fischer.wardle.example.com/no-bad created"},
		{name: "fischers", who: a, kubectl: k("get", "fischers", "-o", "name"), want: "fischer.wardle.example.com/no-bad"},
		{name: "admission of the server", who: a, file: flunder("banned", ""), kubectl: k("create", "-f", "{file}"), fail: true, eventually: true,
			want: `flunders.wardle.example.com "banned" is forbidden: this name may not be used, please change the resource name`},
		{name: "explain", who: a, kubectl: k("explain", "flunder.spec"), eventually: true,
			want: "GROUP:      wardle.example.com\nKIND:       Flunder\nVERSION:    v1alpha1\n\nFIELD: spec <FlunderSpec>"},
		{name: "openapi v2", who: a, kubectl: k("get", "--raw", "/openapi/v2"), want: `"io.k8s.sample-apiserver.pkg.apis.wardle.v1alpha1.Flunder":{`},
		{name: "openapi v3 index", who: a, kubectl: k("get", "--raw", "/openapi/v3"), want: `"apis/wardle.example.com/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=`},
		{name: "forbidden", who: alice, kubectl: kn("get", "flunders"), fail: true,
			want: `Error from server (Forbidden): flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "flunders"`},
		{name: "bind", who: a, kubectl: kn("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice"),
			want: "rolebinding.rbac.authorization.k8s.io/alice-view created"},
		{name: "view does not aggregate flunders", who: alice, kubectl: kn("get", "flunders"), fail: true, want: `User "alice" cannot list resource "flunders"`},
		{name: "role", who: a, kubectl: kn("create", "role", "flunder-reader", "--verb=get,list,watch", "--resource=flunders.wardle.example.com"),
			want: "role.rbac.authorization.k8s.io/flunder-reader created"},
		{name: "bind role", who: a, kubectl: kn("create", "rolebinding", "alice-flunders", "--role=flunder-reader", "--user=alice"),
			want: "rolebinding.rbac.authorization.k8s.io/alice-flunders created"},
		{name: "allowed by both", who: alice, kubectl: kn("get", "flunders", "-o", "name"), eventually: true, cachedByKube: true,
			want: "flunder.wardle.example.com/f1"},
		{name: "read only", who: alice, kubectl: kn("delete", "flunder", "f1"), fail: true,
			want: `User "alice" cannot delete resource "flunders" in API group "wardle.example.com" in the namespace "flunders"`},
		{name: "delete", who: a, kubectl: kn("delete", "flunder", "f1"), want: `flunder.wardle.example.com "f1" deleted`},
		{name: "not found", who: a, kubectl: kn("get", "flunder", "f1"), fail: true,
			want: `Error from server (NotFound): flunders.wardle.example.com "f1" not found`},
		{name: "delete collection", who: a, kubectl: kn("delete", "flunders", "--all"), want: `flunder.wardle.example.com "f2" deleted`},
		{name: "one more", who: a, file: flunder("f5", ""), kubectl: k("create", "-f", "{file}"), want: "flunder.wardle.example.com/f5 created"},
		{name: "namespace deleted with its flunders", who: a, kubectl: k("delete", "namespace", "flunders", "--timeout=30s"), apichainOnly: true,
			want: `namespace "flunders" deleted`},
		{name: "flunders gone", who: a, kubectl: k("get", "--raw", "/apis/wardle.example.com/v1alpha1/flunders"), apichainOnly: true, want: `"items":[]`},
	}
}
