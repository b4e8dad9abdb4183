package openapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves legacy discovery, the OpenAPI documents of
// testKinds, and a tiny object store (enough for kubectl create / apply).
type fakeAPIServer struct {
	t      *testing.T
	kinds  []Kind
	index  []byte
	docs   map[string][]byte // path below /openapi/v3/ -> document
	v2     []byte
	server *httptest.Server

	mu       sync.Mutex
	objects  map[string][]byte // item path -> JSON
	requests []recorded
}

type recorded struct {
	method, path, query, contentType string
	body                             []byte
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	f := &fakeAPIServer{t: t, kinds: testKinds(), docs: map[string][]byte{}, objects: map[string][]byte{}}
	docs := map[schema.GroupVersion][]byte{}
	for _, gv := range []schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion} {
		doc, err := V3(gv, f.kinds)
		if err != nil {
			t.Fatal(err)
		}
		docs[gv] = doc
		f.docs[gvPath(gv)] = doc
	}
	var err error
	if f.index, err = V3Index(docs); err != nil {
		t.Fatal(err)
	}
	if f.v2, err = V2(f.kinds); err != nil {
		t.Fatal(err)
	}
	ns, _ := json.Marshal(&corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", UID: "1", ResourceVersion: "1"},
	})
	f.objects["/api/v1/namespaces/demo"] = ns
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeAPIServer) writeJSON(w http.ResponseWriter, code int, v interface{}) {
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			f.t.Errorf("marshal: %v", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (f *fakeAPIServer) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, k := range f.kinds {
		if k.GroupVersion != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: k.Resource, SingularName: strings.ToLower(k.Kind), Namespaced: k.Namespaced, Kind: k.Kind, Verbs: k.Verbs,
		})
		for _, sub := range k.Subresources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: k.Resource + "/" + sub, Namespaced: k.Namespaced, Kind: k.Kind, Verbs: []string{"get", "patch", "update"}})
		}
	}
	return l
}

func (f *fakeAPIServer) notFound(w http.ResponseWriter, path string) {
	f.writeJSON(w, http.StatusNotFound, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
		Message: path + " not found",
	})
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body})
	f.mu.Unlock()

	p := r.URL.Path
	switch {
	case p == "/version":
		f.writeJSON(w, 200, map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
	case p == "/api":
		f.writeJSON(w, 200, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case p == "/apis":
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
		f.writeJSON(w, 200, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	case p == "/api/v1":
		f.writeJSON(w, 200, f.resourceList(corev1.SchemeGroupVersion))
	case p == "/apis/apps/v1":
		f.writeJSON(w, 200, f.resourceList(appsv1.SchemeGroupVersion))
	case p == "/openapi/v3":
		f.writeJSON(w, 200, f.index)
	case strings.HasPrefix(p, "/openapi/v3/"):
		doc, ok := f.docs[strings.TrimPrefix(p, "/openapi/v3/")]
		if !ok {
			f.notFound(w, p)
			return
		}
		if h := r.URL.Query().Get("hash"); h != Hash(doc) {
			f.t.Errorf("%s requested with hash %q, want %s", p, h, Hash(doc))
		}
		f.writeJSON(w, 200, doc)
	case p == "/openapi/v2":
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			pb, err := V2Protobuf(f.v2)
			if err != nil {
				f.t.Error(err)
			}
			w.Header().Set("Content-Type", V2ProtobufContentType)
			_, _ = w.Write(pb)
			return
		}
		f.writeJSON(w, 200, f.v2)
	default:
		f.serveObject(w, r, body)
	}
}

// serveObject is the object store: GET an item, POST to a collection, PATCH
// an item (answering with the stored object; the test reads the patch).
func (f *fakeAPIServer) serveObject(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Path
	switch r.Method {
	case http.MethodGet:
		obj, ok := f.objects[p]
		if !ok {
			f.notFound(w, p)
			return
		}
		f.writeJSON(w, 200, obj)
	case http.MethodPost:
		var obj map[string]interface{}
		if err := json.Unmarshal(body, &obj); err != nil {
			f.writeJSON(w, 400, &metav1.Status{Status: metav1.StatusFailure, Code: 400, Message: err.Error()})
			return
		}
		md, _ := obj["metadata"].(map[string]interface{})
		name, _ := md["name"].(string)
		md["uid"], md["resourceVersion"] = "u-"+name, "2"
		stored, _ := json.Marshal(obj)
		f.objects[p+"/"+name] = stored
		f.writeJSON(w, 201, stored)
	case http.MethodPatch:
		obj, ok := f.objects[p]
		if !ok {
			f.notFound(w, p)
			return
		}
		f.writeJSON(w, 200, obj)
	default:
		f.writeJSON(w, 405, &metav1.Status{Status: metav1.StatusFailure, Code: 405})
	}
}

func (f *fakeAPIServer) take() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

// TestClientGoOpenAPIV3Root reads the documents through client-go's
// openapi3 root, as kubectl does: /openapi/v3, then the document at the
// serverRelativeURL (with its hash).
func TestClientGoOpenAPIV3Root(t *testing.T) {
	f := newFakeAPIServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: f.server.URL})
	if err != nil {
		t.Fatal(err)
	}
	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(gvs) != 2 {
		t.Errorf("group versions = %v", gvs)
	}
	for _, gv := range []schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion} {
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("GVSpec(%s): %v", gv, err)
		}
		if len(doc.Components.Schemas) == 0 || len(doc.Paths.Paths) == 0 {
			t.Errorf("%s: empty document", gv)
		}
	}
	if _, err := root.GVSpecAsMap(appsv1.SchemeGroupVersion); err != nil {
		t.Error(err)
	}
	if _, err := dc.OpenAPISchema(); err != nil {
		t.Errorf("client-go cannot read the protobuf /openapi/v2: %v", err)
	}
}

// kubectl runs the installed kubectl against f. kubectl is a test prerequisite (the README
// and .ci/run install it): without it the test fails rather than passing unproven.
func kubectl(t *testing.T, f *fakeAPIServer, stdin string, args ...string) (string, string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is required for this test: %v", err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: " + f.server.URL +
		"\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: demo\n" +
		"current-context: fake\nusers:\n- name: fake\n  user: {}\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestKubectlExplain(t *testing.T) {
	f := newFakeAPIServer(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"explain", "configmap"}, []string{
			"KIND:       ConfigMap", "VERSION:    v1", "ConfigMap holds configuration data",
			"data\t<map[string]string>", "metadata\t<ObjectMeta>", "binaryData\t<map[string]string>",
		}},
		{[]string{"explain", "deployment.spec.replicas"}, []string{
			"GROUP:      apps", "KIND:       Deployment", "FIELD: replicas <integer>", "Number of desired pods",
		}},
		{[]string{"explain", "deployment.spec"}, []string{
			"selector\t<LabelSelector> -required-", "template\t<PodTemplateSpec> -required-", "strategy\t<DeploymentStrategy>",
		}},
		{[]string{"explain", "deployment.spec.template.spec.containers.imagePullPolicy"}, []string{
			"FIELD: imagePullPolicy <string>", "ENUM:", "IfNotPresent",
		}},
		{[]string{"explain", "deployment.spec.template.spec.containers.resources.limits"}, []string{
			"FIELD: limits <map[string]Quantity>",
		}},
		{[]string{"explain", "namespaces.status"}, []string{"KIND:       Namespace", "phase\t<string>"}},
		{[]string{"explain", "secret", "--recursive"}, []string{"KIND:       Secret", "stringData\t<map[string]string>", "creationTimestamp\t<string>"}},
	}
	for _, c := range cases {
		out, errOut, err := kubectl(t, f, "", c.args...)
		if err != nil {
			t.Errorf("kubectl %v: %v\n%s%s", c.args, err, out, errOut)
			continue
		}
		t.Logf("kubectl %v:\n%s", c.args, out)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl %v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	for _, r := range f.take() {
		if r.path == "/openapi/v2" {
			t.Error("kubectl explain fell back to /openapi/v2")
		}
	}
}

const applyDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: IMAGE
      - name: sidecar
        image: busybox
`

// TestKubectlCreateAndApply checks that kubectl's default strict validation
// finds server-side field validation in the v3 documents (it sends
// fieldValidation=Strict and never falls back to /openapi/v2), and that
// apply computes its strategic merge patch from the v3 schema.
func TestKubectlCreateAndApply(t *testing.T) {
	f := newFakeAPIServer(t)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  key: value\n"
	if out, errOut, err := kubectl(t, f, cm, "create", "-f", "-"); err != nil {
		t.Fatalf("kubectl create: %v\n%s%s", err, out, errOut)
	}
	sawStrict := false
	for _, r := range f.take() {
		if r.path == "/openapi/v2" {
			t.Error("kubectl create fell back to /openapi/v2")
		}
		if r.method == http.MethodPost && r.path == "/api/v1/namespaces/demo/configmaps" {
			sawStrict = strings.Contains(r.query, "fieldValidation=Strict")
		}
	}
	if !sawStrict {
		t.Error("kubectl create did not send fieldValidation=Strict")
	}

	if out, errOut, err := kubectl(t, f, strings.Replace(applyDeployment, "IMAGE", "nginx:1", 1), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply (create): %v\n%s%s", err, out, errOut)
	}
	f.take()
	out, errOut, err := kubectl(t, f, strings.Replace(applyDeployment, "IMAGE", "nginx:2", 1), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply (patch): %v\n%s%s", err, out, errOut)
	}
	if strings.Contains(strings.ToLower(errOut), "warning") || strings.Contains(errOut, "error") {
		t.Errorf("kubectl apply complained: %s", errOut)
	}
	var patch *recorded
	for _, r := range f.take() {
		if r.path == "/openapi/v2" {
			t.Error("kubectl apply fell back to /openapi/v2")
		}
		if r.method == http.MethodPatch {
			r := r
			patch = &r
		}
	}
	if patch == nil {
		t.Fatal("kubectl apply sent no PATCH")
	}
	t.Logf("PATCH %s?%s %s: %s", patch.path, patch.query, patch.contentType, patch.body)
	if patch.contentType != "application/strategic-merge-patch+json" || !strings.Contains(patch.query, "fieldValidation=Strict") {
		t.Errorf("PATCH content type %q, query %q", patch.contentType, patch.query)
	}
	if !strings.Contains(string(patch.body), `"$setElementOrder/containers"`) || !strings.Contains(string(patch.body), `"nginx:2"`) {
		t.Errorf("patch does not merge containers by name: %s", patch.body)
	}
}
