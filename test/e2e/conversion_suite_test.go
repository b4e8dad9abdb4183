package e2e

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conversion suite: custom resources of CRDs whose conversion strategy is Webhook, served
// in two versions by a real HTTPS conversion webhook on loopback (v1's spec.hostPort is v2's
// spec.host and spec.port), on every path: create, get, list, patch, apply, status and scale
// in either version, a storage version that changes, a webhook that fails, answers for the
// wrong objects or cannot be reached, the CRD's validation, and deleting it. Every
// expectation was checked against kube-apiserver 1.37.2 (APICHAIN_SUITE_KUBE).
func TestConversionSuite(t *testing.T) {
	runSuiteOnBoth(t, conversionSuiteCases(), 25, func(tg *suiteTarget) {
		url, ca := startConversionWebhook(tg.t)
		tg.vars["conv"], tg.vars["convca"], tg.vars["dead"] = url, ca, deadURL(tg.t)
	})
}

// conversionReview is apiextensions.k8s.io's ConversionReview, v1 and v1beta1 alike.
type conversionReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	} `json:"request,omitempty"`
	Response *conversionResponse `json:"response,omitempty"`
}

type conversionResponse struct {
	UID              string           `json:"uid"`
	ConvertedObjects []map[string]any `json:"convertedObjects"`
	Result           metav1.Status    `json:"result"`
}

// startConversionWebhook serves conversions on loopback with a certificate of its own CA (the
// caBundle returned, base64): /convert converts between v1 and v2 (and labels what it
// converted converted-by=webhook), /fail refuses with "no conversion today", /rename renames
// what it converts, /drop answers with no objects.
func startConversionWebhook(t testing.TB) (url, caBundle string) {
	t.Helper()
	ca, err := certs.NewCA("conversion-test-ca", time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueServing("conversion", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(serveConversion), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String(), base64.StdEncoding.EncodeToString(ca.CertPEM)
}

func serveConversion(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var review conversionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	resp := &conversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if r.URL.Path == "/fail" {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "no conversion today"}
	}
	for _, raw := range review.Request.Objects {
		if r.URL.Path != "/convert" && r.URL.Path != "/rename" {
			break
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			http.Error(w, "bad object", http.StatusBadRequest)
			return
		}
		convertHostPort(obj, review.Request.DesiredAPIVersion)
		md, _ := obj["metadata"].(map[string]any)
		if md != nil {
			labels, _ := md["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			labels["converted-by"] = "webhook"
			md["labels"] = labels
			if r.URL.Path == "/rename" {
				md["name"] = "renamed"
			}
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, obj)
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// convertHostPort converts a Target between v1 (spec.hostPort "h:p") and v2 (spec.host,
// spec.port), the example of kube's conversion docs.
func convertHostPort(obj map[string]any, to string) {
	from, _ := obj["apiVersion"].(string)
	obj["apiVersion"] = to
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil || from == to {
		return
	}
	if strings.HasSuffix(to, "/v2") {
		hp, _ := spec["hostPort"].(string)
		host, port, _ := strings.Cut(hp, ":")
		delete(spec, "hostPort")
		spec["host"] = host
		if n, err := strconv.Atoi(port); err == nil {
			spec["port"] = n
		}
		return
	}
	host, _ := spec["host"].(string)
	port, _ := spec["port"].(float64)
	delete(spec, "host")
	delete(spec, "port")
	spec["hostPort"] = host + ":" + strconv.Itoa(int(port))
}

// targetCRD is a Target CRD in two versions whose webhook is at {conv}<path> (or url when
// it starts with "{"), stored as storage.
func targetCRD(plural, kind, url, storage string, reviewVersions string) string {
	if !strings.HasPrefix(url, "{") {
		url = "{conv}" + url
	}
	version := func(name, props string) string {
		return `  - name: ` + name + `
    served: true
    storage: ` + strconv.FormatBool(name == storage) + `
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
` + props + `
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              phase: {type: string}
`
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + plural + `.conv.example.com}
spec:
  group: conv.example.com
  names: {plural: ` + plural + `, kind: ` + kind + `}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ` + reviewVersions + `
      clientConfig: {url: "` + url + `", caBundle: "{convca}"}
  versions:
` + version("v1", "              hostPort: {type: string}") +
		version("v2", "              host: {type: string}\n              port: {type: integer}")
}

func conversionSuiteCases() []suiteCase {
	a := "admin"
	k := func(args ...string) []string { return args }
	kn := func(args ...string) []string { return append(args, "-n", "conv") }
	v1 := func(name, hostPort string) string {
		return "apiVersion: conv.example.com/v1\nkind: Target\nmetadata: {name: " + name + ", namespace: conv}\nspec: {hostPort: \"" + hostPort + "\", replicas: 1}\n"
	}
	v2 := func(kind, name, host string, port int) string {
		return "apiVersion: conv.example.com/v2\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: conv}\nspec: {host: " + host + ", port: " + strconv.Itoa(port) + "}\n"
	}
	established := func(crd string) suiteCase {
		return suiteCase{name: crd + " established", who: a, kubectl: k("wait", "--for=condition=Established", "--timeout=10s", "crd/"+crd+".conv.example.com"),
			want: "condition met", eventually: true}
	}
	const (
		t2       = "targets.v2.conv.example.com"
		t1       = "targets.v1.conv.example.com"
		hostPort = "jsonpath={.apiVersion} {.spec.hostPort} {.metadata.labels.converted-by}"
	)
	return []suiteCase{
		{name: "namespace", who: a, kubectl: k("create", "namespace", "conv"), want: "namespace/conv created"},
		{name: "webhook strategy without a webhook", who: a, kubectl: k("apply", "-f", "{file}"), fail: true,
			file: strings.Replace(targetCRD("nohooks", "NoHook", "/convert", "v1", "[v1]"), "    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {url: \"{conv}/convert\", caBundle: \"{convca}\"}\n", "", 1),
			want: "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"},
		{name: "review versions none kube knows", who: a, kubectl: k("apply", "-f", "{file}"), fail: true,
			file: targetCRD("badreviews", "BadReview", "/convert", "v1", "[v9]"),
			want: `spec.conversion.conversionReviewVersions: Invalid value: ["v9"]: must include at least one of v1, v1beta1`},
		{name: "create CRD", who: a, kubectl: k("apply", "-f", "{file}"), file: targetCRD("targets", "Target", "/convert", "v1", "[v1, v1beta1]"),
			want: "customresourcedefinition.apiextensions.k8s.io/targets.conv.example.com created"},
		established("targets"),
		{name: "the higher version preferred", who: a, kubectl: k("get", "--raw", "/apis/conv.example.com"), eventually: true,
			want: `"preferredVersion":{"groupVersion":"conv.example.com/v2","version":"v2"}`},
		{name: "the higher version first in aggregated discovery", who: a, kubectl: k("api-resources", "--api-group=conv.example.com"),
			want: "re:(?m)^targets\\s+conv.example.com/v2\\s+true\\s+Target$"},
		{name: "create in the storage version", who: a, kubectl: k("apply", "-f", "{file}"), file: v1("a", "localhost:8080"),
			want: "target.conv.example.com/a created", eventually: true},
		{name: "stored version read as is", who: a, kubectl: kn("get", t1, "a", "-o", hostPort), want: "conv.example.com/v1 localhost:8080 "},
		{name: "read in the other version", who: a, kubectl: kn("get", t2, "a", "-o", "jsonpath={.apiVersion} {.spec.host} {.spec.port} {.metadata.labels.converted-by}"),
			want: "conv.example.com/v2 localhost 8080 webhook"},
		{name: "create in the other version", who: a, kubectl: k("apply", "-f", "{file}"), file: v2("Target", "b", "example.com", 443),
			want: "target.conv.example.com/b created"},
		{name: "written in the storage version", who: a, kubectl: kn("get", t1, "b", "-o", hostPort), want: "conv.example.com/v1 example.com:443 webhook"},
		{name: "list converted item by item", who: a, kubectl: kn("get", t2, "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.host}/{.spec.port} {end}"),
			want: "a=localhost/8080 b=example.com/443"},
		{name: "table in the other version", who: a, kubectl: kn("get", t2), want: "re:(?m)^a\\s+\\S+\\n(.*\\n)?b\\s+"},
		{name: "get over http", who: a, curl: k("GET", "/apis/conv.example.com/v2/namespaces/conv/targets/a"), code: 200, want: `"host": "localhost"`},
		{name: "merge patch in the other version", who: a, kubectl: kn("patch", t2, "a", "--type=merge", "-p", `{"spec":{"port":9090}}`),
			want: "target.conv.example.com/a patched"},
		{name: "patched through conversion", who: a, kubectl: kn("get", t1, "a", "-o", hostPort), want: "conv.example.com/v1 localhost:9090 webhook"},
		{name: "server-side apply in the other version", who: a, kubectl: k("apply", "--server-side", "--force-conflicts", "--field-manager=conv-test", "-f", "{file}"),
			file: v2("Target", "b", "example.org", 8443), want: "target.conv.example.com/b serverside-applied"},
		{name: "applied through conversion", who: a, kubectl: kn("get", t1, "b", "-o", hostPort), want: "conv.example.com/v1 example.org:8443 webhook"},
		{name: "status in the other version", who: a, kubectl: kn("patch", t2, "a", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Ready"}}`),
			want: "target.conv.example.com/a patched"},
		{name: "status kept", who: a, kubectl: kn("get", t1, "a", "-o", "jsonpath={.status.phase} {.spec.hostPort}"), want: "Ready localhost:9090"},
		{name: "scale in the other version", who: a, kubectl: kn("scale", t2, "a", "--replicas=3"), want: "target.conv.example.com/a scaled"},
		{name: "scaled", who: a, kubectl: kn("get", t1, "a", "-o", "jsonpath={.spec.replicas} {.spec.hostPort}"), want: "3 localhost:9090"},
		{name: "storage version changes", who: a, kubectl: k("patch", "crd", "targets.conv.example.com", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`),
			want: "customresourcedefinition.apiextensions.k8s.io/targets.conv.example.com patched"},
		{name: "stored versions", who: a, kubectl: k("get", "crd", "targets.conv.example.com", "-o", "jsonpath={.status.storedVersions}"),
			want: `["v1","v2"]`, eventually: true},
		{name: "create in the new storage version's other", who: a, kubectl: k("apply", "-f", "{file}"), file: v1("c", "c.example:80"),
			want: "target.conv.example.com/c created", eventually: true},
		{name: "old and new stored objects read alike", who: a, kubectl: kn("get", t1, "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.hostPort} {end}"),
			want: "a=localhost:9090 b=example.org:8443 c=c.example:80", eventually: true},
		{name: "failing webhook CRD", who: a, kubectl: k("apply", "-f", "{file}"), file: targetCRD("failures", "Failure", "/fail", "v1", "[v1]"),
			want: "customresourcedefinition.apiextensions.k8s.io/failures.conv.example.com created"},
		established("failures"),
		{name: "create needing no conversion", who: a, kubectl: k("apply", "-f", "{file}"), file: strings.Replace(v1("f", "f:1"), "Target", "Failure", 1),
			want: "failure.conv.example.com/f created", eventually: true},
		{name: "read refused by the webhook", who: a, kubectl: kn("get", "failures.v2.conv.example.com", "f"), fail: true,
			want: "re:Error from server \\(InternalError\\): Internal error occurred: StorageError: corrupt object, Code: 7, Key: /conv.example.com/failures/conv/f, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=\\d+: conversion webhook for conv.example.com/v1, Kind=Failure failed: no conversion today"},
		{name: "list refused by the webhook", who: a, curl: k("GET", "/apis/conv.example.com/v2/namespaces/conv/failures"), code: 500,
			want: `re:"message": "failed to read one or more failures.conv.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/conv.example.com/failures/conv/f, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=\d+: conversion webhook for conv.example.com/v1, Kind=Failure failed: no conversion today",\s+"reason": "StorageReadError",\s+"details": \{\s+"name": "list",\s+"group": "conv.example.com",\s+"kind": "failures",\s+"causes": \[\s+\{\s+"reason": "UnexpectedServerResponse",`},
		{name: "write refused by the webhook", who: a, kubectl: k("create", "-f", "{file}"), file: v2("Failure", "g", "g", 1), fail: true,
			want: "conversion webhook for conv.example.com/v2, Kind=Failure failed: no conversion today"},
		{name: "nothing written", who: a, kubectl: kn("get", "failures.v1.conv.example.com", "g"), fail: true,
			want: `failures.conv.example.com "g" not found`},
		{name: "renaming webhook CRD", who: a, kubectl: k("apply", "-f", "{file}"), file: targetCRD("renames", "Rename", "/rename", "v1", "[v1]"),
			want: "customresourcedefinition.apiextensions.k8s.io/renames.conv.example.com created"},
		established("renames"),
		{name: "create to rename", who: a, kubectl: k("apply", "-f", "{file}"), file: strings.Replace(v1("r", "r:1"), "Target", "Rename", 1),
			want: "rename.conv.example.com/r created", eventually: true},
		{name: "metadata the webhook may not change", who: a, kubectl: kn("get", "renames.v2.conv.example.com", "r"), fail: true,
			want: "re:AdditionalErrorMsg: object not decodable revision=\\d+: conversion webhook for conv.example.com/v1, Kind=Rename returned invalid object: must have the same name: r != renamed"},
		{name: "unreachable webhook CRD", who: a, kubectl: k("apply", "-f", "{file}"), file: targetCRD("deads", "Dead", "{dead}/convert", "v1", "[v1]"),
			want: "customresourcedefinition.apiextensions.k8s.io/deads.conv.example.com created"},
		established("deads"),
		{name: "create to not reach", who: a, kubectl: k("apply", "-f", "{file}"), file: strings.Replace(v1("d", "d:1"), "Target", "Dead", 1),
			want: "dead.conv.example.com/d created", eventually: true},
		{name: "unreachable webhook", who: a, kubectl: kn("get", "deads.v2.conv.example.com", "d"), fail: true,
			want: "re:conversion webhook for conv.example.com/v1, Kind=Dead failed: Post \"https://127.0.0.1:\\d+/convert\\?timeout=30s\": dial tcp 127.0.0.1:\\d+: connect: connection refused"},
		{name: "delete CRD with its objects", who: a, kubectl: k("delete", "crd", "targets.conv.example.com", "--timeout=30s"),
			want: `customresourcedefinition.apiextensions.k8s.io "targets.conv.example.com" deleted`},
		{name: "gone", who: a, kubectl: k("get", "crd", "targets.conv.example.com"), fail: true,
			want: `customresourcedefinitions.apiextensions.k8s.io "targets.conv.example.com" not found`, eventually: true},
	}
}
