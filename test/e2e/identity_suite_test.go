package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The identity suite: about a hundred cases of anonymous access, bad credentials, RBAC,
// escalation, impersonation, the review APIs and service-account tokens, run in order with
// unmodified kubectl, curl and openssl against a server started with --token-auth-file and
// default flags otherwise. Every expectation was checked against kube-apiserver 1.37.2: with
// APICHAIN_SUITE_KUBE set to a kube-reference run directory (started with
// KUBE_EXTRA_FLAGS=--token-auth-file=<the tokens below>), the same cases run against it.

const suiteTokens = "alice-token,alice,1001\nbob-token,bob,1002,devs\ncarol-token,carol,1003,\"ops,devs\"\n"

// suiteTarget is the server under test and the files to reach it.
type suiteTarget struct {
	t               *testing.T
	kube            bool   // the real kube-apiserver
	server          string // https://host:port
	caFile, caKey   string
	adminKubeconfig string
	dir             string
	vars            map[string]string
	kubeconfigs     map[string]string
	webhooks        *webhookServer           // for cases with received, made by a setup
	background      map[string]chan []string // outputs of background cases, by name
}

// suiteCase is one command and what it must answer. who is "admin" (the admin certificate),
// "anonymous", "token:<token>", "var:<saved token>", "cert:<name>" (a certificate made with
// openssl by the cluster's CA or, for cert:foreign, by another CA).
type suiteCase struct {
	name    string
	who     string
	kubectl []string
	curl    []string // method, path, then extra curl arguments
	openssl []string // arguments of openssl s_client
	fail    bool     // kubectl must fail
	code    int      // curl's HTTP status
	want    string   // substring of the output; "re:" starts a regular expression
	// eventually retries for five seconds: a change to RBAC or an object reaches every
	// gateway within a second.
	eventually bool
	save       string // keep the trimmed output under this name
	file       string // content written to a file passed as "{file}" (kubectl -f)
	// cachedByKube: kube-apiserver keeps accepting a token for ten seconds after it was last
	// accepted (its token cache); apichain checks every request.
	cachedByKube bool
	// apichainOnly: what a bare kube-apiserver leaves to kube-controller-manager (aggregating
	// ClusterRoles), which apichain runs in core.
	apichainOnly bool
	// received: the output is the request of the last AdmissionReview the test's webhook
	// server got on this path, as JSON.
	received string
	// background runs the case this many times at once without waiting; the case named by
	// await later outputs their sorted outputs (for curl, the HTTP codes), one per line.
	background int
	await      string
}

func suiteCases() []suiteCase {
	anon, alice, bob, carol := "anonymous", "token:alice-token", "token:bob-token", "token:carol-token"
	tokenReview := func(token string, auds ...string) string {
		a := ""
		if len(auds) > 0 {
			a = `,"audiences":["` + strings.Join(auds, `","`) + `"]`
		}
		return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + token + `"` + a + `}}`
	}
	return []suiteCase{
		// Anonymous: public-info-viewer's paths, 403 for everything else.
		{name: "anonymous healthz", who: anon, curl: []string{"GET", "/healthz"}, code: 200, want: "ok"},
		{name: "anonymous livez", who: anon, curl: []string{"GET", "/livez"}, code: 200, want: "ok"},
		{name: "anonymous readyz", who: anon, curl: []string{"GET", "/readyz"}, code: 200, want: "ok"},
		{name: "anonymous version", who: anon, curl: []string{"GET", "/version"}, code: 200, want: `"gitVersion"`},
		{name: "anonymous livez subpath", who: anon, curl: []string{"GET", "/livez/ping"}, code: 403,
			want: `forbidden: User \"system:anonymous\" cannot get path \"/livez/ping\"`},
		{name: "anonymous api", who: anon, curl: []string{"GET", "/api"}, code: 403,
			want: `forbidden: User \"system:anonymous\" cannot get path \"/api\"`},
		{name: "anonymous apis", who: anon, curl: []string{"GET", "/apis"}, code: 403, want: `"reason": "Forbidden"`},
		{name: "anonymous list namespaces", who: anon, curl: []string{"GET", "/api/v1/namespaces"}, code: 403,
			want: `namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope`},
		{name: "anonymous get namespace", who: anon, curl: []string{"GET", "/api/v1/namespaces/default"}, code: 403,
			want: `namespaces \"default\" is forbidden: User \"system:anonymous\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"default\"`},
		{name: "anonymous create", who: anon, curl: []string{"POST", "/api/v1/namespaces", "-H", "Content-Type: application/json", "-d", `{"metadata":{"name":"x"}}`},
			code: 403, want: `cannot create resource \"namespaces\"`},
		{name: "anonymous metrics", who: anon, curl: []string{"GET", "/metrics"}, code: 403, want: `cannot get path \"/metrics\"`},
		{name: "anonymous pprof", who: anon, curl: []string{"GET", "/debug/pprof/"}, code: 403, want: `cannot get path \"/debug/pprof/\"`},
		{name: "anonymous oidc discovery", who: anon, curl: []string{"GET", "/.well-known/openid-configuration"}, code: 403},
		{name: "anonymous jwks", who: anon, curl: []string{"GET", "/openid/v1/jwks"}, code: 403},
		{name: "anonymous self review", who: anon, curl: []string{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "-H", "Content-Type: application/json",
			"-d", `{"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`}, code: 403, want: `cannot create resource \"selfsubjectaccessreviews\"`},
		{name: "anonymous openapi", who: anon, curl: []string{"GET", "/openapi/v2"}, code: 403, want: `cannot get path \"/openapi/v2\"`},

		// Bad credentials: 401, never anonymous.
		{name: "unknown token", who: "token:nope", curl: []string{"GET", "/api"}, code: 401, want: `"message": "Unauthorized"`},
		{name: "unknown token on healthz", who: "token:nope", curl: []string{"GET", "/healthz"}, code: 401},
		{name: "token shaped like a JWT", who: "token:a.b.c", curl: []string{"GET", "/api"}, code: 401},
		{name: "empty bearer is no credential", who: anon, curl: []string{"GET", "/healthz", "-H", "Authorization: Bearer "}, code: 200},
		{name: "basic auth is no credential", who: anon, curl: []string{"GET", "/api", "-u", "alice:alice-token"}, code: 403,
			want: `User \"system:anonymous\"`},
		{name: "lower-case bearer", who: anon, curl: []string{"GET", "/api", "-H", "Authorization: bearer alice-token"}, code: 200},
		{name: "unknown token kubectl", who: "token:nope", kubectl: []string{"get", "pods"}, fail: true,
			want: "error: You must be logged in to the server"},
		{name: "foreign certificate", who: "cert:foreign", curl: []string{"GET", "/api"}, code: 401},
		{name: "foreign certificate handshake completes", who: "cert:foreign", openssl: []string{}, want: "re:New, TLSv1\\.3, Cipher is"},
		{name: "cluster CA certificate", who: "cert:dave", kubectl: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"},
			want: `dave ["devs","system:authenticated"]`},

		// RBAC for token users.
		{name: "create namespace", who: "admin", kubectl: []string{"create", "namespace", "team"}, want: "namespace/team created"},
		{name: "alice whoami", who: alice, kubectl: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"},
			want: `alice ["system:authenticated"]`},
		{name: "alice denied", who: alice, kubectl: []string{"get", "pods", "-n", "team"}, fail: true,
			want: `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team"`},
		{name: "alice can-i no", who: alice, kubectl: []string{"auth", "can-i", "list", "pods", "-n", "team"}, fail: true, want: "no"},
		{name: "reader role", who: "admin", kubectl: []string{"create", "role", "reader", "-n", "team", "--verb=get,list,watch", "--resource=pods,configmaps"},
			want: "role.rbac.authorization.k8s.io/reader created"},
		{name: "bind alice to reader", who: "admin", kubectl: []string{"create", "rolebinding", "alice-view", "-n", "team", "--role=reader", "--user=alice"},
			want: "rolebinding.rbac.authorization.k8s.io/alice-view created"},
		{name: "alice allowed", who: alice, kubectl: []string{"get", "pods", "-n", "team"}, want: "No resources found in team namespace.", eventually: true},
		{name: "alice can-i yes", who: alice, kubectl: []string{"auth", "can-i", "list", "pods", "-n", "team"}, want: "yes"},
		{name: "alice can-i delete", who: alice, kubectl: []string{"auth", "can-i", "delete", "pods", "-n", "team"}, fail: true, want: "no"},
		{name: "alice other namespace", who: alice, kubectl: []string{"auth", "can-i", "list", "pods", "-n", "default"}, fail: true, want: "no"},
		{name: "reader excludes secrets", who: alice, kubectl: []string{"get", "secrets", "-n", "team"}, fail: true,
			want: `secrets is forbidden: User "alice" cannot list resource "secrets"`},
		{name: "alice can-i list", who: alice, kubectl: []string{"auth", "can-i", "--list", "-n", "team"}, want: "re:(?m)^pods\\s+\\[\\]\\s+\\[\\]\\s+\\[get list watch\\]$"},
		{name: "non-resource can-i", who: alice, kubectl: []string{"auth", "can-i", "get", "/healthz"}, want: "yes"},
		{name: "alice metrics denied", who: alice, kubectl: []string{"get", "--raw", "/metrics"}, fail: true,
			want: `User "alice" cannot get path "/metrics"`},
		{name: "metrics reader role", who: "admin", kubectl: []string{"create", "clusterrole", "metrics-reader", "--verb=get", "--non-resource-url=/metrics"},
			want: "clusterrole.rbac.authorization.k8s.io/metrics-reader created"},
		{name: "metrics reader binding", who: "admin", kubectl: []string{"create", "clusterrolebinding", "alice-metrics", "--clusterrole=metrics-reader", "--user=alice"},
			want: "created"},
		{name: "alice metrics allowed", who: alice, kubectl: []string{"get", "--raw", "/metrics"}, want: "# TYPE", eventually: true},
		{name: "bob group denied", who: bob, kubectl: []string{"create", "configmap", "c1", "-n", "team"}, fail: true,
			want: `configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "team"`},
		{name: "editor role", who: "admin", kubectl: []string{"create", "role", "editor", "-n", "team", "--verb=get,list,watch,create,update,patch,delete",
			"--resource=configmaps,secrets"}, want: "created"},
		{name: "bind devs to editor", who: "admin", kubectl: []string{"create", "rolebinding", "devs-edit", "-n", "team", "--role=editor", "--group=devs"},
			want: "created"},
		{name: "bob creates by group", who: bob, kubectl: []string{"create", "configmap", "c1", "-n", "team"}, want: "configmap/c1 created", eventually: true},
		{name: "carol by her second group", who: carol, kubectl: []string{"get", "configmap", "c1", "-n", "team", "-o", "name"}, want: "configmap/c1"},
		{name: "editor reads secrets", who: bob, kubectl: []string{"get", "secrets", "-n", "team"}, want: "No resources found"},
		{name: "editor has no roles", who: bob, kubectl: []string{"auth", "can-i", "create", "roles", "-n", "team"}, fail: true, want: "no"},
		{name: "unbind alice", who: "admin", kubectl: []string{"delete", "rolebinding", "alice-view", "-n", "team"}, want: "deleted"},
		{name: "alice denied again", who: alice, kubectl: []string{"get", "pods", "-n", "team"}, fail: true,
			want: `User "alice" cannot list resource "pods"`, eventually: true},
		{name: "alice cannot delete kube-system", who: alice, kubectl: []string{"delete", "namespace", "kube-system"}, fail: true,
			want: `namespaces "kube-system" is forbidden: User "alice" cannot delete resource "namespaces"`},
		{name: "kube-system is immortal", who: "admin", kubectl: []string{"delete", "namespace", "kube-system"}, fail: true,
			want: `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
		{name: "default is immortal", who: "admin", kubectl: []string{"delete", "namespace", "default"}, fail: true,
			want: `namespaces "default" is forbidden: this namespace may not be deleted`},
		{name: "cluster-admin binding", who: "admin", kubectl: []string{"get", "clusterrolebinding", "cluster-admin", "-o", "jsonpath={.subjects[0].name}"},
			want: "system:masters"},
		{name: "aggregated rule", who: "admin", file: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: widgets-view\n  labels: {rbac.authorization.k8s.io/aggregate-to-view: \"true\"}\nrules:\n- apiGroups: [example.com]\n  resources: [widgets]\n  verbs: [get]\n",
			kubectl: []string{"create", "-f", "{file}"}, want: "clusterrole.rbac.authorization.k8s.io/widgets-view created"},
		{name: "view aggregates it", who: "admin", kubectl: []string{"get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}"},
			want: "widgets", eventually: true, apichainOnly: true},
		{name: "admin aggregates view", who: "admin", kubectl: []string{"get", "clusterrole", "admin", "-o", "jsonpath={.rules[*].resources}"},
			want: "widgets", eventually: true, apichainOnly: true},

		// Escalation prevention.
		{name: "role manager", who: "admin", kubectl: []string{"create", "role", "rbac-manager", "-n", "team", "--verb=create,get,list",
			"--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io"}, want: "created"},
		{name: "bob manages rbac", who: "admin", kubectl: []string{"create", "rolebinding", "bob-rbac", "-n", "team", "--role=rbac-manager", "--user=bob"},
			want: "created"},
		{name: "bob grants what he holds", who: bob, kubectl: []string{"create", "role", "cm-get", "-n", "team", "--verb=get", "--resource=configmaps"},
			want: "role.rbac.authorization.k8s.io/cm-get created", eventually: true},
		{name: "bob cannot grant more", who: bob, kubectl: []string{"create", "role", "everything", "-n", "team", "--verb=*", "--resource=secrets"}, fail: true,
			want: `roles.rbac.authorization.k8s.io "everything" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held`},
		{name: "bob cannot bind cluster-admin", who: bob, kubectl: []string{"create", "rolebinding", "bob-admin", "-n", "team", "--clusterrole=cluster-admin", "--user=bob"}, fail: true,
			want: `rolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held`},
		{name: "bob binds his role", who: bob, kubectl: []string{"create", "rolebinding", "alice-cm", "-n", "team", "--role=cm-get", "--user=alice"},
			want: "created"},
		{name: "bob no cluster roles", who: bob, kubectl: []string{"create", "clusterrole", "mine", "--verb=get", "--resource=pods"}, fail: true,
			want: `clusterroles.rbac.authorization.k8s.io is forbidden: User "bob" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`},
		{name: "grant bind on cluster-admin", who: "admin", kubectl: []string{"create", "role", "bind-admin", "-n", "team", "--verb=bind",
			"--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=cluster-admin"}, want: "created"},
		{name: "bob may bind", who: "admin", kubectl: []string{"create", "rolebinding", "bob-bind", "-n", "team", "--role=bind-admin", "--user=bob"}, want: "created"},
		{name: "bob binds cluster-admin with bind", who: bob, kubectl: []string{"create", "rolebinding", "carol-admin", "-n", "team", "--clusterrole=cluster-admin", "--user=carol"},
			want: "created", eventually: true},
		{name: "grant escalate", who: "admin", kubectl: []string{"create", "role", "escalate-roles", "-n", "team", "--verb=escalate",
			"--resource=roles.rbac.authorization.k8s.io"}, want: "created"},
		{name: "bob may escalate", who: "admin", kubectl: []string{"create", "rolebinding", "bob-escalate", "-n", "team", "--role=escalate-roles", "--user=bob"},
			want: "created"},
		{name: "bob escalates", who: bob, kubectl: []string{"create", "role", "everything", "-n", "team", "--verb=*", "--resource=secrets"},
			want: "role.rbac.authorization.k8s.io/everything created", eventually: true},

		// Impersonation.
		{name: "as alice", who: "admin", kubectl: []string{"get", "secrets", "-n", "team", "--as=alice"}, fail: true,
			want: `secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team"`},
		{name: "can-i as alice", who: "admin", kubectl: []string{"auth", "can-i", "get", "configmaps", "-n", "team", "--as=alice"}, want: "yes"},
		{name: "can-i list as alice", who: "admin", kubectl: []string{"auth", "can-i", "--list", "-n", "team", "--as=alice"},
			want: "re:(?m)^configmaps\\s+\\[\\]\\s+\\[\\]\\s+\\[get\\]$"},
		{name: "as with groups", who: "admin", kubectl: []string{"auth", "whoami", "--as=bob", "--as-group=devs", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"},
			want: `bob ["devs","system:authenticated"]`},
		{name: "as service account", who: "admin", kubectl: []string{"auth", "whoami", "--as=system:serviceaccount:team:ci", "-o", "jsonpath={.status.userInfo.groups}"},
			want: `["system:serviceaccounts","system:serviceaccounts:team","system:authenticated"]`},
		{name: "as uid", who: "admin", kubectl: []string{"auth", "whoami", "--as=bob", "--as-uid=1234", "-o", "jsonpath={.status.userInfo.uid}"}, want: "1234"},
		{name: "as unauthenticated", who: "admin", kubectl: []string{"auth", "whoami", "--as=bob", "--as-group=system:unauthenticated"}, fail: true,
			want: "the selfsubjectreviews API is not enabled in the cluster or you do not have permission to call it"},
		{name: "extra headers", who: "admin", curl: []string{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "-H", "Impersonate-User: bob",
			"-H", "Impersonate-Extra-Scopes: view", "-H", "Content-Type: application/json", "-d", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`},
			code: 201, want: `"scopes": [`},
		{name: "group without user", who: "admin", curl: []string{"GET", "/api", "-H", "Impersonate-Group: devs"}, code: 400,
			want: `without impersonating a user`},
		// kube 1.37 tries constrained impersonation first and answers with its first refusal.
		{name: "bob may not impersonate", who: bob, kubectl: []string{"get", "pods", "-n", "team", "--as=alice"}, fail: true,
			want: `pods is forbidden: User "bob" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "team"`},
		{name: "bob may not impersonate a service account", who: bob, kubectl: []string{"get", "pods", "-n", "team", "--as=system:serviceaccount:team:ci"}, fail: true,
			want: `pods is forbidden: User "bob" cannot impersonate-on:serviceaccount:list resource "pods" in API group "" in the namespace "team"`},
		{name: "impersonator role", who: "admin", kubectl: []string{"create", "clusterrole", "alice-impersonator", "--verb=impersonate", "--resource=users", "--resource-name=alice"},
			want: "created"},
		{name: "bob impersonator", who: "admin", kubectl: []string{"create", "clusterrolebinding", "bob-impersonates", "--clusterrole=alice-impersonator", "--user=bob"},
			want: "created"},
		{name: "bob as alice", who: bob, kubectl: []string{"auth", "whoami", "--as=alice", "-o", "jsonpath={.status.userInfo.username}"}, want: "alice", eventually: true},
		// Legacy impersonation last worked for bob, so its refusal is the answer now.
		{name: "bob not as carol", who: bob, kubectl: []string{"get", "pods", "-n", "team", "--as=carol"}, fail: true,
			want: `users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{name: "constrained impersonation role", who: "admin", file: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: carol-as-alice}\nrules:\n" +
			"- apiGroups: [authentication.k8s.io]\n  resources: [users]\n  resourceNames: [alice]\n  verbs: [\"impersonate:user-info\"]\n" +
			"- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [\"impersonate-on:user-info:get\", \"impersonate-on:user-info:list\"]\n",
			kubectl: []string{"create", "-f", "{file}"}, want: "created"},
		{name: "constrained impersonation binding", who: "admin", kubectl: []string{"create", "clusterrolebinding", "carol-as-alice", "--clusterrole=carol-as-alice", "--user=carol"},
			want: "created"},
		{name: "carol gets as alice", who: carol, kubectl: []string{"get", "configmap", "c1", "-n", "team", "--as=alice", "-o", "name"}, want: "configmap/c1", eventually: true},
		{name: "alice may not list", who: carol, kubectl: []string{"get", "configmaps", "-n", "team", "--as=alice"}, fail: true,
			want: `configmaps is forbidden: User "alice" cannot list resource "configmaps"`},
		// (In team carol is cluster-admin by now, which grants every impersonate-on verb there.)
		{name: "carol not as alice elsewhere", who: carol, kubectl: []string{"get", "secrets", "-n", "default", "--as=alice"}, fail: true,
			want: `secrets is forbidden: User "carol" cannot impersonate-on:user-info:list resource "secrets" in API group "" in the namespace "default"`},
		{name: "carol not as bob", who: carol, kubectl: []string{"get", "configmap", "c1", "-n", "team", "--as=bob"}, fail: true,
			want: `users.authentication.k8s.io "bob" is forbidden: User "carol" cannot impersonate:user-info resource "users" in API group "authentication.k8s.io" at the cluster scope`},

		// The review APIs.
		{name: "x509 whoami", who: "admin", kubectl: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"},
			want: `["system:masters","system:authenticated"]`},
		{name: "token review", who: "admin", file: tokenReview("bob-token"), kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.authenticated} {.status.user.username} {.status.user.groups}"},
			want: `true bob ["devs","system:authenticated"]`},
		{name: "token review unknown", who: "admin", file: tokenReview("nope"), kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.authenticated}/{.status.error}"},
			want: "/invalid bearer token"},
		{name: "token review needs a token", who: "admin", file: tokenReview(""), kubectl: []string{"create", "-f", "{file}"}, fail: true,
			want: "token is required for TokenReview in authentication"},
		// (kubectl validates a kind without PATCH by listing CRDs, which alice may not: as on kube.)
		{name: "alice no token reviews", who: alice, file: tokenReview("bob-token"), kubectl: []string{"create", "--validate=false", "-f", "{file}"}, fail: true,
			want: `tokenreviews.authentication.k8s.io is forbidden: User "alice" cannot create resource "tokenreviews"`},
		{name: "subject access review", who: "admin",
			file:    `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"team"}}}`,
			kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.allowed} {.status.reason}"},
			want:    `true RBAC: allowed by RoleBinding "alice-cm/team" of Role "cm-get" to User "alice"`},
		{name: "subject access review denied", who: "admin",
			file:    `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"delete","resource":"configmaps","namespace":"team"}}}`,
			kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath=[{.status.allowed}]"}, want: "[false]"},
		{name: "local subject access review", who: "admin",
			file:    `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"team"},"spec":{"user":"x","groups":["devs"],"resourceAttributes":{"verb":"create","resource":"configmaps","namespace":"team"}}}`,
			kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.allowed}"}, want: "true"},
		{name: "self subject access review", who: carol,
			file:    `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"update","resource":"configmaps","namespace":"team"}}}`,
			kubectl: []string{"create", "--validate=false", "-f", "{file}", "-o", "jsonpath={.status.allowed}"}, want: "true"},

		// Service-account tokens.
		{name: "no such service account", who: "admin", kubectl: []string{"create", "token", "nobody", "-n", "team"}, fail: true,
			want: `serviceaccounts "nobody" not found`},
		{name: "create service account", who: "admin", kubectl: []string{"create", "serviceaccount", "robot", "-n", "team"}, want: "serviceaccount/robot created"},
		{name: "create token", who: "admin", kubectl: []string{"create", "token", "robot", "-n", "team"}, want: "re:^eyJ", save: "robot"},
		{name: "token whoami", who: "var:robot", kubectl: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"},
			want: `system:serviceaccount:team:robot ["system:serviceaccounts","system:serviceaccounts:team","system:authenticated"]`},
		{name: "token denied", who: "var:robot", kubectl: []string{"get", "configmaps", "-n", "team"}, fail: true,
			want: `User "system:serviceaccount:team:robot" cannot list resource "configmaps"`},
		{name: "bind robot", who: "admin", kubectl: []string{"create", "rolebinding", "robot-view", "-n", "team", "--role=reader", "--serviceaccount=team:robot"},
			want: "created"},
		{name: "token allowed", who: "var:robot", kubectl: []string{"get", "configmaps", "-n", "team", "-o", "name"}, want: "configmap/c1", eventually: true},
		{name: "token too short", who: "admin", kubectl: []string{"create", "token", "robot", "-n", "team", "--duration=1m"}, fail: true,
			want: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
		{name: "token for nobody", who: "admin", kubectl: []string{"create", "token", "nobody", "-n", "team"}, fail: true,
			want: `serviceaccounts "nobody" not found`},
		{name: "token bound to a missing pod", who: "admin", kubectl: []string{"create", "token", "robot", "-n", "team", "--bound-object-kind=Pod", "--bound-object-name=nope"},
			fail: true, want: `pods "nope" not found`},
		{name: "robot may not create tokens", who: "var:robot", kubectl: []string{"create", "token", "robot", "-n", "team"}, fail: true,
			want: `cannot create resource "serviceaccounts/token" in API group "" in the namespace "team"`},
		{name: "token for vault", who: "admin", kubectl: []string{"create", "token", "robot", "-n", "team", "--audience=vault"}, want: "re:^eyJ", save: "vault"},
		{name: "vault token not for the API", who: "var:vault", kubectl: []string{"get", "configmaps", "-n", "team"}, fail: true, want: "Unauthorized"},
		{name: "review vault token for vault", who: "admin", file: tokenReview("{vault}", "vault"),
			kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.authenticated} {.status.audiences}"}, want: `true ["vault"]`},
		{name: "review api token for vault", who: "admin", file: tokenReview("{robot}", "vault"),
			kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath={.status.error}"}, want: `is invalid for the target audiences ["vault"]`},
		{name: "oidc discovery", who: "var:robot", curl: []string{"GET", "/.well-known/openid-configuration"}, code: 200,
			want: `"issuer":"https://kubernetes.default.svc.cluster.local"`},
		{name: "jwks", who: "var:robot", curl: []string{"GET", "/openid/v1/jwks"}, code: 200, want: `"use":"sig"`},
		{name: "secret for binding", who: "admin", kubectl: []string{"create", "secret", "generic", "bound", "-n", "team", "--from-literal=a=b"}, want: "created"},
		{name: "token bound to the secret", who: "admin", kubectl: []string{"create", "token", "robot", "-n", "team", "--bound-object-kind=Secret", "--bound-object-name=bound"},
			want: "re:^eyJ", save: "bound"},
		{name: "bound token works", who: "var:bound", kubectl: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"}, want: "system:serviceaccount:team:robot"},
		{name: "delete the secret", who: "admin", kubectl: []string{"delete", "secret", "bound", "-n", "team"}, want: "deleted"},
		{name: "bound token dies with the secret", who: "var:bound", kubectl: []string{"get", "configmaps", "-n", "team"}, fail: true,
			want: "Unauthorized", eventually: true, cachedByKube: true},
		{name: "delete the service account", who: "admin", kubectl: []string{"delete", "serviceaccount", "robot", "-n", "team"}, want: "deleted"},
		{name: "token dies with the service account", who: "var:robot", kubectl: []string{"get", "configmaps", "-n", "team"}, fail: true,
			want: "Unauthorized", eventually: true, cachedByKube: true},
		{name: "recreate the service account", who: "admin", kubectl: []string{"create", "serviceaccount", "robot", "-n", "team"}, want: "created"},
		{name: "old token stays dead", who: "var:robot", kubectl: []string{"get", "configmaps", "-n", "team"}, fail: true, want: "Unauthorized"},
		{name: "review dead token", who: "admin", file: tokenReview("{robot}"), kubectl: []string{"create", "-f", "{file}", "-o", "jsonpath=[{.status.authenticated}] {.status.error}"},
			want: "re:^\\[\\] \\[invalid bearer token, service account UID \\(\\S+\\) does not match claim \\(\\S+\\)\\]$"},
	}
}

// TestIdentitySuite runs the suite against apichain, and against kube-apiserver when
// APICHAIN_SUITE_KUBE names a kube-reference run directory.
func TestIdentitySuite(t *testing.T) {
	runSuiteOnBoth(t, suiteCases(), 100)
}

// runSuiteOnBoth runs cases (at least min of them) against apichain, and against
// kube-apiserver when APICHAIN_SUITE_KUBE names a kube-reference run directory (a fresh one
// per suite: the cases create what they use).
// runSuiteOnBoth runs cases against kube-apiserver (with APICHAIN_SUITE_KUBE) and apichain;
// setup prepares each target (its own webhook server and the variables cases use).
func runSuiteOnBoth(t *testing.T, cases []suiteCase, min int, setup ...func(*suiteTarget)) {
	require.GreaterOrEqual(t, len(cases), min)
	for _, tool := range []string{"curl", "openssl", "kubectl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if dir := os.Getenv("APICHAIN_SUITE_KUBE"); dir != "" {
		t.Run("kube-apiserver", func(t *testing.T) {
			cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "kubeconfig"))
			require.NoError(t, err)
			runSuite(t, &suiteTarget{kube: true, server: cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server,
				caFile: filepath.Join(dir, "certs", "ca.crt"), caKey: filepath.Join(dir, "certs", "ca.key"),
				adminKubeconfig: filepath.Join(dir, "kubeconfig")}, cases, setup...)
		})
	}
	t.Run("apichain", func(t *testing.T) {
		tokens := filepath.Join(t.TempDir(), "tokens.csv")
		writeFile(t, tokens, suiteTokens)
		// It listens on loopback; the address it advertises (a documentation address) is what
		// the default/kubernetes endpoints list.
		c, _ := startAllInOne(t, "--token-auth-file", tokens, "--advertise-address", suiteAdvertiseAddress)
		runSuite(t, &suiteTarget{server: c.base, caFile: filepath.Join(c.data, "pki", "ca.crt"), caKey: filepath.Join(c.data, "pki", "ca.key"),
			adminKubeconfig: filepath.Join(c.data, "admin.kubeconfig")}, cases, setup...)
	})
}

// suiteAdvertiseAddress is the apichain suite server's --advertise-address.
const suiteAdvertiseAddress = "192.0.2.10"

func runSuite(t *testing.T, tg *suiteTarget, cases []suiteCase, setup ...func(*suiteTarget)) {
	tg.t, tg.dir, tg.vars, tg.kubeconfigs = t, t.TempDir(), map[string]string{}, map[string]string{}
	tg.background = map[string]chan []string{}
	for _, f := range setup {
		f(tg)
	}
	for i, c := range cases {
		if c.apichainOnly && tg.kube {
			continue
		}
		if c.background > 0 {
			tg.startBackground(i, c)
			continue
		}
		deadline := time.Now()
		switch {
		case c.cachedByKube && tg.kube:
			deadline = deadline.Add(15 * time.Second)
		case c.eventually:
			deadline = deadline.Add(5 * time.Second)
		}
		var out, problem string
		for {
			out, problem = tg.run(i, c)
			if problem == "" || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if problem != "" {
			t.Errorf("case %d %q: %s\noutput:\n%s", i+1, c.name, problem, out)
			continue
		}
		if c.save != "" {
			tg.vars[c.save] = strings.TrimSpace(out)
		}
	}
}

// expand replaces {name} with saved values.
func (tg *suiteTarget) expand(s string) string {
	for k, v := range tg.vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// run runs one case and says what is wrong with its outcome ("" for nothing).
// startBackground starts c.background copies of case i; their outputs go to c.name.
func (tg *suiteTarget) startBackground(i int, c suiteCase) {
	done := make(chan []string, 1)
	tg.background[c.name] = done
	outs := make([]string, c.background)
	var wg sync.WaitGroup
	for j := range c.background {
		wg.Go(func() { outs[j], _ = tg.run(i, c) })
	}
	go func() {
		wg.Wait()
		sort.Strings(outs)
		done <- outs
	}()
}

func (tg *suiteTarget) run(i int, c suiteCase) (string, string) {
	var out string
	var failed bool
	switch {
	case c.await != "":
		select {
		case outs := <-tg.background[c.await]:
			out = strings.Join(outs, "\n")
		case <-time.After(60 * time.Second):
			return "", "the background case " + c.await + " did not end"
		}
	case c.received != "":
		reviews := tg.webhooks.received(c.received)
		if len(reviews) == 0 {
			return "", "the webhook got nothing on " + c.received
		}
		b, err := json.Marshal(reviews[len(reviews)-1].Request)
		require.NoError(tg.t, err)
		out = string(b)
	case c.kubectl != nil:
		args := make([]string, len(c.kubectl))
		for j, a := range c.kubectl {
			args[j] = tg.expand(a)
			if a == "{file}" {
				args[j] = filepath.Join(tg.dir, "case-"+strconv.Itoa(i)+".json")
				writeFile(tg.t, args[j], tg.expand(c.file))
			}
		}
		var err error
		out, err = tg.exec("kubectl", append([]string{"--kubeconfig", tg.kubeconfig(c.who)}, args...)...)
		failed = err != nil
		if failed != c.fail {
			return out, "kubectl failed: " + strconv.FormatBool(failed) + ", want " + strconv.FormatBool(c.fail)
		}
	case c.curl != nil:
		args := append([]string{"-sS", "--max-time", "20", "-w", "\n%{http_code}", "--cacert", tg.caFile, "-X", c.curl[0]}, tg.credentials(c.who)...)
		for _, a := range c.curl[2:] {
			args = append(args, tg.expand(a))
		}
		args = append(args, tg.server+tg.expand(c.curl[1]))
		raw, err := tg.exec("curl", args...)
		if err != nil {
			return raw, "curl: " + err.Error()
		}
		body, code, _ := cutLast(raw, "\n")
		out = body
		if c.background > 0 {
			return code, ""
		}
		if code != strconv.Itoa(c.code) {
			return out, "HTTP " + code + ", want " + strconv.Itoa(c.code)
		}
	case c.openssl != nil:
		host := strings.TrimPrefix(tg.server, "https://")
		cert, key := tg.certificate(strings.TrimPrefix(c.who, "cert:"))
		cmd := exec.Command("openssl", append([]string{"s_client", "-connect", host, "-CAfile", tg.caFile, "-cert", cert, "-key", key}, c.openssl...)...)
		cmd.Stdin = strings.NewReader("")
		b, _ := cmd.CombinedOutput()
		out = string(b)
	}
	want := tg.expand(c.want)
	if want == "" {
		return out, ""
	}
	if re, ok := strings.CutPrefix(want, "re:"); ok {
		if !regexp.MustCompile(re).MatchString(strings.TrimSpace(out)) {
			return out, "output does not match " + re
		}
		return out, ""
	}
	if !strings.Contains(out, want) {
		return out, "output lacks " + want
	}
	return out, ""
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+len(sep):], true
}

func (tg *suiteTarget) exec(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(b), err
}

// token is the bearer token of who, "" for none.
func (tg *suiteTarget) token(who string) string {
	if tok, ok := strings.CutPrefix(who, "token:"); ok {
		return tok
	}
	if name, ok := strings.CutPrefix(who, "var:"); ok {
		return tg.vars[name]
	}
	return ""
}

// credentials are curl's arguments for who.
func (tg *suiteTarget) credentials(who string) []string {
	switch {
	case who == "admin":
		cfg, err := clientcmd.LoadFromFile(tg.adminKubeconfig)
		require.NoError(tg.t, err)
		for name, a := range cfg.AuthInfos {
			cert := filepath.Join(tg.dir, name+"-admin.crt")
			key := filepath.Join(tg.dir, name+"-admin.key")
			crt, k := a.ClientCertificateData, a.ClientKeyData
			if len(crt) == 0 {
				crt, _ = os.ReadFile(a.ClientCertificate)
				k, _ = os.ReadFile(a.ClientKey)
			}
			writeFile(tg.t, cert, string(crt))
			writeFile(tg.t, key, string(k))
			return []string{"--cert", cert, "--key", key}
		}
	case strings.HasPrefix(who, "cert:"):
		cert, key := tg.certificate(strings.TrimPrefix(who, "cert:"))
		return []string{"--cert", cert, "--key", key}
	case tg.token(who) != "":
		return []string{"-H", "Authorization: Bearer " + tg.token(who)}
	}
	return nil
}

// kubeconfig is a kubeconfig that authenticates as who, made once.
func (tg *suiteTarget) kubeconfig(who string) string {
	if who == "admin" {
		return tg.adminKubeconfig
	}
	key := who
	if strings.HasPrefix(who, "var:") {
		key = who + "=" + tg.token(who)
	}
	if path, ok := tg.kubeconfigs[key]; ok {
		return path
	}
	auth := &clientcmdapi.AuthInfo{}
	switch {
	case strings.HasPrefix(who, "cert:"):
		auth.ClientCertificate, auth.ClientKey = tg.certificate(strings.TrimPrefix(who, "cert:"))
	case who != "anonymous":
		auth.Token = tg.token(who)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: tg.server, CertificateAuthority: tg.caFile}
	cfg.AuthInfos["u"] = auth
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(tg.dir, "kubeconfig-"+strconv.Itoa(len(tg.kubeconfigs)))
	require.NoError(tg.t, clientcmd.WriteToFile(*cfg, path))
	tg.kubeconfigs[key] = path
	return path
}

// certificate makes a client certificate with openssl: "foreign" from a CA of its own,
// anything else signed by the cluster's CA with the name as CN and O=devs.
func (tg *suiteTarget) certificate(name string) (string, string) {
	cert, key := filepath.Join(tg.dir, name+".crt"), filepath.Join(tg.dir, name+".key")
	if _, err := os.Stat(cert); err == nil {
		return cert, key
	}
	ca, caKey := tg.caFile, tg.caKey
	if name == "foreign" {
		ca, caKey = filepath.Join(tg.dir, "foreign-ca.crt"), filepath.Join(tg.dir, "foreign-ca.key")
		tg.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", caKey, "-out", ca,
			"-days", "1", "-subj", "/CN=foreign-ca")
	}
	csr := filepath.Join(tg.dir, name+".csr")
	ext := filepath.Join(tg.dir, name+".ext")
	writeFile(tg.t, ext, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
	tg.openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", "/O=devs/CN="+name)
	tg.openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", cert)
	return cert, key
}

func (tg *suiteTarget) openssl(args ...string) {
	out, err := tg.exec("openssl", args...)
	require.NoError(tg.t, err, "openssl %v: %s", args, out)
}
