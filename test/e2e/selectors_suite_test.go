package e2e

import (
	"net/url"
	"regexp"
	"testing"
)

// The field selector suite: every built-in kind's field labels as kube-apiserver 1.37 takes
// them (its field label conversion functions and its registries' values), its words for a label
// a kind does not take, and a list or watch across namespaces naming its object, which
// informers on one object make. Every expectation was checked against kube-apiserver 1.37.2
// (APICHAIN_SUITE_KUBE runs them there too).
func TestFieldSelectorSuite(t *testing.T) {
	runSuiteOnBoth(t, fieldSelectorSuiteCases(), 25)
}

func fieldSelectorSuiteCases() []suiteCase {
	apply := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: content, want: want}
	}
	get := func(name string, args []string, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: append([]string{"get"}, args...), want: want}
	}
	list := func(name, path, selector string, code int, want string) suiteCase {
		return suiteCase{name: name, who: "admin", curl: []string{"GET", path + "?fieldSelector=" + url.QueryEscape(selector)}, code: code, want: want}
	}
	// across lists every namespace's objects the selector selects, as "<namespaces>/<names>";
	// the case wants exactly that.
	across := func(name, resource, selector, want string) suiteCase {
		return get(name, []string{resource, "-A", "--field-selector", selector, "-o", "jsonpath={.items[*].metadata.namespace}/{.items[*].metadata.name}"},
			"re:^"+regexp.QuoteMeta(want)+"$")
	}
	return []suiteCase{
		apply("namespaces", "apiVersion: v1\nkind: Namespace\nmetadata: {name: fs1}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: fs2}\n",
			"namespace/fs1 created\nnamespace/fs2 created"),
		// A bare kube-apiserver makes no default service accounts, which pods need; apichain does.
		apply("default service accounts", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: fs1}\n---\n"+
			"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: fs2}\n", "serviceaccount/default"),
		apply("twin pods", `apiVersion: v1
kind: Pod
metadata: {name: twin, namespace: fs1}
spec: {nodeName: fs-node, hostNetwork: true, restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: twin, namespace: fs2}
spec: {containers: [{name: c, image: busybox}]}
`, "pod/twin created\npod/twin created"),

		// One named object across namespaces: a list, an empty list, a watch.
		across("one name across namespaces", "pods", "metadata.name=twin", "fs1 fs2/twin twin"),
		list("no such name across namespaces", "/api/v1/pods", "metadata.name=nobody", 200, `"items": []`),
		{name: "a watch of one name across namespaces", who: "admin",
			curl: []string{"GET", "/api/v1/pods?watch=1&timeoutSeconds=1&fieldSelector=" + url.QueryEscape("metadata.name=twin")}, code: 200,
			want: `re:(?s)"type":"ADDED".*"name":"twin".*"type":"ADDED".*"name":"twin"`},

		// Pods.
		across("pods by node", "pods", "spec.nodeName=fs-node", "fs1/twin"),
		across("pods by spec.host, the node's old label", "pods", "spec.host=fs-node", "fs1/twin"),
		across("pods on the host network", "pods", "spec.hostNetwork=true", "fs1/twin"),
		across("pods not on it", "pods", "spec.hostNetwork=false", "fs2/twin"),
		across("pods by restart policy", "pods", "spec.restartPolicy=Never", "fs1/twin"),
		across("pods by service account", "pods", "spec.serviceAccountName=default,metadata.namespace=fs2", "fs2/twin"),
		across("pods by phase and scheduler", "pods", "status.phase=Pending,spec.schedulerName=default-scheduler", "fs1 fs2/twin twin"),
		list("a label pods do not have", "/api/v1/pods", "spec.nodeNam=x", 400, `"message": "field label not supported: spec.nodeNam"`),

		// Nodes: no metadata.namespace.
		apply("an unschedulable node", "apiVersion: v1\nkind: Node\nmetadata: {name: fs-node}\nspec: {unschedulable: true}\n", "node/fs-node created"),
		get("nodes by schedulability", []string{"nodes", "--field-selector", "spec.unschedulable=true", "-o", "name"}, "node/fs-node"),
		list("nodes have no namespace label", "/api/v1/nodes", "metadata.namespace=fs1", 400, `"message": "field label not supported: metadata.namespace"`),

		// Namespaces, secrets, services, replication controllers.
		get("namespaces by phase", []string{"namespaces", "--field-selector", "status.phase=Active,metadata.name=fs1", "-o", "name"}, "namespace/fs1"),
		apply("a secret of its own type", "apiVersion: v1\nkind: Secret\nmetadata: {name: custom, namespace: fs1}\ntype: example.com/custom\n", "secret/custom created"),
		across("secrets by type", "secrets", "type=example.com/custom", "fs1/custom"),
		apply("services", `apiVersion: v1
kind: Service
metadata: {name: headless, namespace: fs1}
spec: {clusterIP: None, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: np, namespace: fs2}
spec: {type: NodePort, ports: [{port: 80}]}
`, "service/headless created\nservice/np created"),
		across("services by cluster IP", "services", "spec.clusterIP=None", "fs1/headless"),
		across("services by type", "services", "spec.type=NodePort", "fs2/np"),
		apply("a replication controller", `apiVersion: v1
kind: ReplicationController
metadata: {name: rc, namespace: fs1}
spec: {replicas: 0, selector: {app: rc}, template: {metadata: {labels: {app: rc}}, spec: {containers: [{name: c, image: busybox}]}}}
`, "replicationcontroller/rc created"),
		across("replication controllers by replicas", "replicationcontrollers", "status.replicas=0", "fs1/rc"),

		// Kinds with kube's default conversion: metadata.name and metadata.namespace only.
		list("config maps have the default labels", "/api/v1/namespaces/fs1/configmaps", "data.x=1", 400,
			`"message": "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""`),
		list("a cluster-scoped kind takes metadata.namespace too", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "metadata.namespace=fs1", 200, `"items": []`),
		list("replica sets have no status.replicas", "/apis/apps/v1/replicasets", "status.replicas=0", 400,
			`"message": "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""`),

		// Events: core/v1's labels, and events.k8s.io/v1's names for them.
		apply("an event", `apiVersion: v1
kind: Event
metadata: {name: e1, namespace: fs1}
involvedObject: {kind: Pod, name: twin, namespace: fs1}
reason: Tested
type: Normal
reportingComponent: fs-controller
reportingInstance: fs-controller-1
action: Test
eventTime: "2026-01-01T00:00:00.000000Z"
`, "event/e1 created"),
		get("events by object and reason", []string{"events", "-n", "fs1", "--field-selector", "involvedObject.name=twin,involvedObject.kind=Pod,reason=Tested", "-o", "name"}, "event/e1"),
		get("an event's source is its reporting controller when it names none", []string{"events", "-n", "fs1", "--field-selector", "source=fs-controller", "-o", "name"}, "event/e1"),
		list("events by regarding", "/apis/events.k8s.io/v1/namespaces/fs1/events", "regarding.name=twin,reportingController=fs-controller", 200, `"name": "e1"`),
		list("events.k8s.io has no involvedObject", "/apis/events.k8s.io/v1/namespaces/fs1/events", "involvedObject.name=twin", 400,
			`"message": "field label not supported: involvedObject.name"`),

		// Jobs, certificate signing requests.
		apply("a job", `apiVersion: batch/v1
kind: Job
metadata: {name: j1, namespace: fs1}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
`, "job.batch/j1 created"),
		across("jobs by successes", "jobs", "status.successful=0", "fs1/j1"),
		list("a label jobs do not have", "/apis/batch/v1/jobs", "status.failed=0", 400, `"message": "field label \"status.failed\" not supported for Job"`),
		{name: "a certificate signing request", who: "admin", kubectl: []string{"apply", "-f", "{file}"}, want: "certificatesigningrequest.certificates.k8s.io/fs-csr created",
			file: "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: fs-csr}\nspec: {request: " + janeCSR + ", signerName: example.com/fs, usages: [client auth]}\n"},
		get("CSRs by signer", []string{"csr", "--field-selector", "spec.signerName=example.com/fs", "-o", "name"}, "certificatesigningrequest.certificates.k8s.io/fs-csr"),
		list("CSRs have no namespace label", "/apis/certificates.k8s.io/v1/certificatesigningrequests", "metadata.namespace=x", 400,
			`"message": "field label not supported: metadata.namespace"`),
		list("resource slices say their kind", "/apis/resource.k8s.io/v1/resourceslices", "spec.pool=x", 400,
			`"message": "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool"`),
	}
}
