package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kube-openapi/pkg/spec3"
	protoopenapi "k8s.io/kube-openapi/pkg/util/proto"
	protovalidation "k8s.io/kube-openapi/pkg/util/proto/validation"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// testKinds are the kinds of the tests: configmaps, secrets, namespaces
// (core v1) and deployments (apps/v1).
func testKinds() []Kind {
	return []Kind{
		{
			GroupVersion: corev1.SchemeGroupVersion, Kind: "ConfigMap", Resource: "configmaps", Namespaced: true, Verbs: allVerbs,
			New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		},
		{
			GroupVersion: corev1.SchemeGroupVersion, Kind: "Secret", Resource: "secrets", Namespaced: true, Verbs: allVerbs,
			New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
		},
		{
			GroupVersion: corev1.SchemeGroupVersion, Kind: "Namespace", Resource: "namespaces",
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, Subresources: []string{"status", "finalize"},
			New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		},
		{
			GroupVersion: appsv1.SchemeGroupVersion, Kind: "Deployment", Resource: "deployments", Namespaced: true, Verbs: allVerbs,
			Subresources: []string{"status", "scale"},
			New:          func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
		},
	}
}

func mustV3(t *testing.T, gv schema.GroupVersion) ([]byte, *spec3.OpenAPI) {
	t.Helper()
	raw, err := V3(gv, testKinds())
	if err != nil {
		t.Fatalf("V3(%s): %v", gv, err)
	}
	if !json.Valid(raw) {
		t.Fatalf("V3(%s) is not valid JSON", gv)
	}
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(raw, doc); err != nil {
		t.Fatalf("spec3 cannot parse V3(%s): %v", gv, err)
	}
	return raw, doc
}

// resolve follows $ref and single-element allOf the way kubectl explain and
// strategicpatch do.
func resolve(t *testing.T, schemas map[string]*spec.Schema, s *spec.Schema) *spec.Schema {
	t.Helper()
	for {
		switch {
		case s.Ref.String() != "":
			name := strings.TrimPrefix(s.Ref.String(), v3SchemaRefPrefix)
			next, ok := schemas[name]
			if !ok {
				t.Fatalf("dangling $ref %s", s.Ref.String())
			}
			s = next
		case len(s.AllOf) == 1 && len(s.Properties) == 0:
			s = &s.AllOf[0]
		default:
			return s
		}
	}
}

// field walks a dotted path of properties from a definition.
func field(t *testing.T, schemas map[string]*spec.Schema, def string, path ...string) *spec.Schema {
	t.Helper()
	s, ok := schemas[def]
	if !ok {
		t.Fatalf("no definition %s", def)
	}
	for _, p := range path {
		s = resolve(t, schemas, s)
		if s.Items != nil && s.Items.Schema != nil {
			s = resolve(t, schemas, s.Items.Schema)
		}
		prop, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s: no property %s in %v", def, p, path)
		}
		s = &prop
	}
	return s
}

func hasGVK(ext spec.Extensions, gvk schema.GroupVersionKind) bool {
	v, ok := ext[extGVK]
	if !ok {
		return false
	}
	var list []map[string]string
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &list); err != nil {
		var one map[string]string
		if err := json.Unmarshal(b, &one); err != nil {
			return false
		}
		list = append(list, one)
	}
	for _, m := range list {
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

func TestV3CoreConfigMap(t *testing.T) {
	_, doc := mustV3(t, corev1.SchemeGroupVersion)
	if doc.Version != "3.0.0" || doc.Components == nil {
		t.Fatalf("bad document header: %q %v", doc.Version, doc.Components)
	}
	schemas := doc.Components.Schemas
	cm := schemas["io.k8s.api.core.v1.ConfigMap"]
	if cm == nil {
		t.Fatal("no io.k8s.api.core.v1.ConfigMap")
	}
	if !hasGVK(cm.Extensions, corev1.SchemeGroupVersion.WithKind("ConfigMap")) {
		t.Errorf("ConfigMap lacks x-kubernetes-group-version-kind: %v", cm.Extensions)
	}
	if !hasGVK(schemas["io.k8s.api.core.v1.ConfigMapList"].Extensions, corev1.SchemeGroupVersion.WithKind("ConfigMapList")) {
		t.Error("ConfigMapList lacks x-kubernetes-group-version-kind")
	}
	if !strings.Contains(cm.Description, "ConfigMap holds configuration data") {
		t.Errorf("ConfigMap description = %q", cm.Description)
	}
	data := cm.Properties["data"]
	if !data.Type.Contains("object") || data.AdditionalProperties == nil || data.AdditionalProperties.Schema == nil ||
		!data.AdditionalProperties.Schema.Type.Contains("string") {
		t.Errorf("data is not an object of strings: %+v", data)
	}
	if !strings.Contains(data.Description, "configuration data") {
		t.Errorf("data description = %q", data.Description)
	}
	if bd := cm.Properties["binaryData"]; bd.AdditionalProperties == nil || bd.AdditionalProperties.Schema.Format != "byte" {
		t.Errorf("binaryData is not a map of base64 strings: %+v", bd)
	}
	if len(cm.Required) != 0 {
		t.Errorf("ConfigMap required = %v, want none", cm.Required)
	}
	md := cm.Properties["metadata"]
	if len(md.AllOf) != 1 || md.AllOf[0].Ref.String() != v3SchemaRefPrefix+"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" || md.Description == "" {
		t.Errorf("metadata should be allOf[$ref ObjectMeta] with a description: %+v", md)
	}
	om := schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
	if om == nil || len(om.Required) != 0 {
		t.Fatalf("ObjectMeta missing or with required fields: %+v", om)
	}
	ct := field(t, schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp")
	if r := resolve(t, schemas, ct); !r.Type.Contains("string") || r.Format != "date-time" {
		t.Errorf("creationTimestamp resolves to %+v, want string date-time", r)
	}
	for _, name := range []string{"ListMeta", "Status", "DeleteOptions", "Patch", "WatchEvent", "APIResourceList", "OwnerReference", "ManagedFieldsEntry"} {
		if schemas["io.k8s.apimachinery.pkg.apis.meta.v1."+name] == nil {
			t.Errorf("missing meta type %s", name)
		}
	}
	if !hasGVK(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Status"].Extensions, schema.GroupVersionKind{Version: "v1", Kind: "Status"}) {
		t.Error("Status lacks its group-version-kind")
	}
	owner := schemas["io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"]
	if got, want := owner.Required, []string{"apiVersion", "kind", "name", "uid"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OwnerReference required = %v, want %v", got, want)
	}
	if mt := owner.Extensions[extMapType]; mt != "atomic" {
		t.Errorf("OwnerReference x-kubernetes-map-type = %v, want atomic", mt)
	}

	// The paths kubectl looks at.
	for _, p := range []string{
		"/api/v1/", "/api/v1/configmaps", "/api/v1/namespaces/{namespace}/configmaps",
		"/api/v1/namespaces/{namespace}/configmaps/{name}", "/api/v1/watch/namespaces/{namespace}/configmaps",
		"/api/v1/namespaces", "/api/v1/namespaces/{name}", "/api/v1/namespaces/{name}/status", "/api/v1/namespaces/{name}/finalize",
		"/api/v1/namespaces/{namespace}/secrets/{name}",
	} {
		if doc.Paths.Paths[p] == nil {
			t.Errorf("missing path %s", p)
		}
	}
	if doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments"] != nil {
		t.Error("the core document has apps paths")
	}
	item := doc.Paths.Paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]
	for method, op := range map[string]*spec3.Operation{"get": item.Get, "put": item.Put, "patch": item.Patch, "delete": item.Delete} {
		if op == nil {
			t.Errorf("configmaps/{name} has no %s", method)
			continue
		}
		if got := op.Extensions[extGVK]; !reflect.DeepEqual(got, map[string]interface{}{"group": "", "version": "v1", "kind": "ConfigMap"}) {
			t.Errorf("%s gvk = %#v", method, got)
		}
	}
	if a := item.Patch.Extensions[extAction]; a != "patch" {
		t.Errorf("patch x-kubernetes-action = %v", a)
	}
	if id := item.Patch.OperationId; id != "patchCoreV1NamespacedConfigMap" {
		t.Errorf("patch operationId = %s", id)
	}
	list := doc.Paths.Paths["/api/v1/namespaces/{namespace}/configmaps"].Get
	if list == nil || list.Extensions[extAction] != "list" || list.OperationId != "listCoreV1NamespacedConfigMap" {
		t.Errorf("bad list operation: %+v", list)
	}
	if ref := list.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); ref != v3SchemaRefPrefix+"io.k8s.api.core.v1.ConfigMapList" {
		t.Errorf("list returns %s", ref)
	}
	ns := doc.Paths.Paths["/api/v1/namespaces"]
	if ns.Delete != nil {
		t.Error("namespaces has deletecollection though its verbs do not")
	}
}

// supportsFieldValidation is what kubectl 1.32 (cli-runtime's
// queryParamVerifierV3) asks of a group/version document before it sends
// fieldValidation=Strict instead of validating on the client.
func supportsFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) bool {
	for _, path := range doc.Paths.Paths {
		op := path.Patch
		if op == nil {
			continue
		}
		var got map[string]string
		if err := op.Extensions.GetObject(extGVK, &got); err != nil {
			continue
		}
		if got["group"] != gvk.Group || got["version"] != gvk.Version || got["kind"] != gvk.Kind {
			continue
		}
		for _, p := range op.Parameters {
			if p.Name == "fieldValidation" {
				return true
			}
		}
		return false
	}
	return false
}

func TestV3FieldValidationSupport(t *testing.T) {
	_, core := mustV3(t, corev1.SchemeGroupVersion)
	_, apps := mustV3(t, appsv1.SchemeGroupVersion)
	for _, c := range []struct {
		doc *spec3.OpenAPI
		gvk schema.GroupVersionKind
	}{
		{core, corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core, corev1.SchemeGroupVersion.WithKind("Secret")},
		{core, corev1.SchemeGroupVersion.WithKind("Namespace")},
		{apps, appsv1.SchemeGroupVersion.WithKind("Deployment")},
	} {
		if !supportsFieldValidation(c.doc, c.gvk) {
			t.Errorf("%s: no PATCH operation taking fieldValidation", c.gvk)
		}
	}
}

func TestV3AppsDeployment(t *testing.T) {
	_, doc := mustV3(t, appsv1.SchemeGroupVersion)
	schemas := doc.Components.Schemas
	dep := schemas["io.k8s.api.apps.v1.Deployment"]
	if dep == nil || !hasGVK(dep.Extensions, appsv1.SchemeGroupVersion.WithKind("Deployment")) {
		t.Fatalf("Deployment missing or without gvk: %+v", dep)
	}
	containers := field(t, schemas, "io.k8s.api.apps.v1.Deployment", "spec", "template", "spec", "containers")
	for k, want := range map[string]interface{}{
		extPatchMergeKey: "name", extPatchStrategy: "merge", extListType: "map", extListMapKeys: []interface{}{"name"},
	} {
		if got := containers.Extensions[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("containers %s = %#v, want %#v", k, got, want)
		}
	}
	container := resolve(t, schemas, containers.Items.Schema)
	if !reflect.DeepEqual(container.Required, []string{"name"}) {
		t.Errorf("Container required = %v", container.Required)
	}
	replicas := field(t, schemas, "io.k8s.api.apps.v1.Deployment", "spec", "replicas")
	if !replicas.Type.Contains("integer") || replicas.Format != "int32" || !strings.Contains(replicas.Description, "desired pods") {
		t.Errorf("replicas = %+v", replicas)
	}
	if got := schemas["io.k8s.api.apps.v1.DeploymentSpec"].Required; !reflect.DeepEqual(got, []string{"selector", "template"}) {
		t.Errorf("DeploymentSpec required = %v", got)
	}
	pull := field(t, schemas, "io.k8s.api.apps.v1.Deployment", "spec", "template", "spec", "containers", "imagePullPolicy")
	if !reflect.DeepEqual(pull.Enum, []interface{}{"Always", "IfNotPresent", "Never"}) {
		t.Errorf("imagePullPolicy enum = %v", pull.Enum)
	}

	q := schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
	if q == nil || len(q.OneOf) != 2 || !q.OneOf[0].Type.Contains("string") || !q.OneOf[1].Type.Contains("number") || q.Description == "" {
		t.Errorf("Quantity = %+v", q)
	}
	limits := field(t, schemas, "io.k8s.api.core.v1.Container", "resources", "limits")
	if limits.AdditionalProperties == nil || resolve(t, schemas, limits.AdditionalProperties.Schema) != q {
		t.Errorf("resources.limits is not a map of Quantity: %+v", limits)
	}
	ios := schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
	if ios == nil || ios.Format != "int-or-string" || len(ios.OneOf) != 2 {
		t.Errorf("IntOrString = %+v", ios)
	}
	maxSurge := field(t, schemas, "io.k8s.api.apps.v1.DeploymentSpec", "strategy", "rollingUpdate", "maxSurge")
	if resolve(t, schemas, maxSurge) != ios {
		t.Errorf("maxSurge does not refer to IntOrString: %+v", maxSurge)
	}
	scale := schemas["io.k8s.api.autoscaling.v1.Scale"]
	if scale == nil || !hasGVK(scale.Extensions, schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
		t.Errorf("Scale = %+v", scale)
	}
	sp := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
	if sp == nil || sp.Patch == nil || sp.Patch.OperationId != "patchAppsV1NamespacedDeploymentScale" {
		t.Fatalf("bad scale path: %+v", sp)
	}
	if st := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]; st == nil || st.Get == nil || st.Put == nil || st.Patch == nil {
		t.Errorf("bad status path: %+v", st)
	}
	if doc.Paths.Paths["/api/v1/namespaces/{namespace}/configmaps"] != nil {
		t.Error("the apps document has core paths")
	}

	// Every $ref points at a definition of the document.
	raw, _ := json.Marshal(doc)
	for _, part := range strings.Split(string(raw), `"$ref":"`)[1:] {
		ref := part[:strings.IndexByte(part, '"')]
		if _, ok := schemas[strings.TrimPrefix(ref, v3SchemaRefPrefix)]; !ok {
			t.Errorf("dangling $ref %s", ref)
		}
	}
}

// TestV3StrategicMergePatch computes an apply patch from the v3 schema the
// way kubectl apply does (strategicpatch.PatchMetaFromOpenAPIV3).
func TestV3StrategicMergePatch(t *testing.T) {
	_, doc := mustV3(t, appsv1.SchemeGroupVersion)
	var meta strategicpatch.PatchMetaFromOpenAPIV3
	for _, s := range doc.Components.Schemas {
		if hasGVK(s.Extensions, appsv1.SchemeGroupVersion.WithKind("Deployment")) {
			meta = strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
		}
	}
	if meta.Schema == nil {
		t.Fatal("no schema with the Deployment gvk")
	}
	deployment := func(image string) []byte {
		return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},` +
			`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
			`"spec":{"containers":[{"name":"web","image":"` + image + `","ports":[{"containerPort":80}],` +
			`"resources":{"limits":{"cpu":"500m"}}},{"name":"sidecar","image":"busybox"}]}}}}`)
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch(deployment("nginx:1"), deployment("nginx:2"), deployment("nginx:1"), meta, false)
	if err != nil {
		t.Fatalf("CreateThreeWayMergePatch: %v", err)
	}
	if !bytes.Contains(patch, []byte(`"$setElementOrder/containers"`)) || !bytes.Contains(patch, []byte(`"nginx:2"`)) {
		t.Errorf("patch does not merge containers by name: %s", patch)
	}
}

func TestV3Deterministic(t *testing.T) {
	a, _ := mustV3(t, appsv1.SchemeGroupVersion)
	b, _ := mustV3(t, appsv1.SchemeGroupVersion)
	if !bytes.Equal(a, b) {
		t.Fatal("two V3 builds differ; the index hash would change between runs")
	}
}

func TestV3Index(t *testing.T) {
	core, _ := mustV3(t, corev1.SchemeGroupVersion)
	apps, _ := mustV3(t, appsv1.SchemeGroupVersion)
	raw, err := V3Index(map[schema.GroupVersion][]byte{corev1.SchemeGroupVersion: core, appsv1.SchemeGroupVersion: apps})
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	sum := func(b []byte) string { s := sha512.Sum512(b); return strings.ToUpper(hex.EncodeToString(s[:])) }
	want := map[string]string{
		"api/v1":       "/openapi/v3/api/v1?hash=" + sum(core),
		"apis/apps/v1": "/openapi/v3/apis/apps/v1?hash=" + sum(apps),
	}
	if len(idx.Paths) != len(want) {
		t.Errorf("index has %d paths, want %d: %s", len(idx.Paths), len(want), raw)
	}
	for k, v := range want {
		if got := idx.Paths[k].ServerRelativeURL; got != v {
			t.Errorf("%s: serverRelativeURL = %s, want %s", k, got, v)
		}
	}
	if Hash(core) != sum(core) || len(Hash(core)) != 128 {
		t.Errorf("Hash = %s", Hash(core))
	}
}

func TestV2(t *testing.T) {
	raw, err := V2(testKinds())
	if err != nil {
		t.Fatal(err)
	}
	sw := &spec.Swagger{}
	if err := json.Unmarshal(raw, sw); err != nil {
		t.Fatalf("spec.Swagger cannot parse V2: %v", err)
	}
	if sw.Swagger != "2.0" {
		t.Errorf("swagger = %q", sw.Swagger)
	}
	for _, p := range []string{"/api/v1/namespaces/{namespace}/configmaps/{name}", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "/api/v1/namespaces/{name}"} {
		if _, ok := sw.Paths.Paths[p]; !ok {
			t.Errorf("missing path %s", p)
		}
	}
	cm := sw.Definitions["io.k8s.api.core.v1.ConfigMap"]
	if !hasGVK(cm.Extensions, corev1.SchemeGroupVersion.WithKind("ConfigMap")) {
		t.Error("v2 ConfigMap lacks its gvk")
	}
	if md := cm.Properties["metadata"]; md.Ref.String() != v2SchemaRefPrefix+"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" || md.Description == "" || md.Default != nil {
		t.Errorf("v2 metadata = %+v, want a $ref with a description and no default", md)
	}
	if q := sw.Definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]; !q.Type.Contains("string") || len(q.OneOf) != 0 {
		t.Errorf("v2 Quantity = %+v", q)
	}
	if ios := sw.Definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; !ios.Type.Contains("string") || ios.Format != "int-or-string" {
		t.Errorf("v2 IntOrString = %+v", ios)
	}
	patch := sw.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].Patch
	var found bool
	for _, p := range patch.Parameters {
		found = found || (p.Name == "fieldValidation" && p.In == "query")
	}
	if !found {
		t.Error("v2 deployment PATCH has no fieldValidation query parameter")
	}
	if strings.Contains(string(raw), "#/components/") {
		t.Error("v2 document has v3 references")
	}
}

// v2Models parses V2 the way kubectl does for client-side validation: the
// protobuf document from /openapi/v2 into kube-openapi's proto models.
func v2Models(t *testing.T) protoopenapi.Models {
	t.Helper()
	raw, err := V2(testKinds())
	if err != nil {
		t.Fatal(err)
	}
	pb, err := V2Protobuf(raw)
	if err != nil {
		t.Fatal(err)
	}
	doc := &openapiv2.Document{}
	if err := proto.Unmarshal(pb, doc); err != nil {
		t.Fatalf("unmarshal protobuf v2: %v", err)
	}
	models, err := protoopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	return models
}

// validate is kubectl's client-side validation (k8s.io/kubectl/pkg/validation
// calls kube-openapi's ValidateModel on the model of the object's gvk).
func validate(t *testing.T, models protoopenapi.Models, doc string) []error {
	t.Helper()
	js, err := yaml.ToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	gv, err := schema.ParseGroupVersion(obj["apiVersion"].(string))
	if err != nil {
		t.Fatal(err)
	}
	gvk := gv.WithKind(obj["kind"].(string))
	var name string
	for _, n := range models.ListModels() {
		m := models.LookupModel(n)
		for _, g := range gvksOf(m) {
			if g == gvk {
				name = n
			}
		}
	}
	if name == "" {
		t.Fatalf("no model for %s", gvk)
	}
	return protovalidation.ValidateModel(obj, models.LookupModel(name), gvk.Kind)
}

func gvksOf(m protoopenapi.Schema) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	list, _ := m.GetExtensions()[extGVK].([]interface{})
	for _, item := range list {
		get := func(string) interface{} { return nil }
		switch mm := item.(type) {
		case map[interface{}]interface{}: // v2 models
			get = func(k string) interface{} { return mm[k] }
		case map[string]interface{}: // v3 models
			get = func(k string) interface{} { return mm[k] }
		}
		g, _ := get("group").(string)
		v, _ := get("version").(string)
		k, _ := get("kind").(string)
		out = append(out, schema.GroupVersionKind{Group: g, Version: v, Kind: k})
	}
	return out
}

const validConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: demo
  labels: {app: web}
data:
  key: value
binaryData:
  blob: aGVsbG8=
immutable: false
`

const validDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: "25%"}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        ports: [{containerPort: 80}]
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`

func TestV2ClientSideValidation(t *testing.T) {
	models := v2Models(t)
	for name, doc := range map[string]string{"configmap": validConfigMap, "deployment": validDeployment} {
		if errs := validate(t, models, doc); len(errs) != 0 {
			t.Errorf("valid %s rejected: %v", name, errs)
		}
	}
	for name, c := range map[string]struct{ doc, want string }{
		"unknown top-level field": {validConfigMap + "extra: 1\n", `unknown field "extra"`},
		"unknown metadata field":  {strings.Replace(validConfigMap, "  name: cfg", "  name: cfg\n  nmae: x", 1), `unknown field "nmae"`},
		"data of a non-string":    {strings.Replace(validConfigMap, "key: value", "key: {a: b}", 1), "data.key"},
		"replicas as a string":    {strings.Replace(validDeployment, "replicas: 2", "replicas: two", 1), "spec.replicas"},
		"unknown container field": {strings.Replace(validDeployment, "image: nginx", "image: nginx\n        imagee: x", 1), `unknown field "imagee"`},
		"container without name":  {strings.Replace(validDeployment, "- name: web\n        image", "- image", 1), `missing required field "name"`},
	} {
		errs := validate(t, models, c.doc)
		if len(errs) == 0 {
			t.Errorf("%s: accepted", name)
			continue
		}
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		if joined := strings.Join(msgs, "; "); !strings.Contains(joined, c.want) {
			t.Errorf("%s: errors %q do not mention %q", name, joined, c.want)
		}
	}
}

// TestV3ProtoModels parses the v3 documents into kube-openapi's proto models
// (what kubectl-style validators build from /openapi/v3) and checks that an
// unknown top-level field is rejected.
func TestV3ProtoModels(t *testing.T) {
	raw, _ := mustV3(t, corev1.SchemeGroupVersion)
	doc, err := openapiv3.ParseDocument(raw)
	if err != nil {
		t.Fatalf("gnostic cannot parse V3: %v", err)
	}
	models, err := protoopenapi.NewOpenAPIV3Data(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIV3Data: %v", err)
	}
	if errs := validate(t, models, validConfigMap); len(errs) != 0 {
		t.Errorf("valid configmap rejected: %v", errs)
	}
	if errs := validate(t, models, validConfigMap+"extra: 1\n"); len(errs) == 0 {
		t.Error("configmap with an unknown field accepted")
	}
}

func TestKindErrors(t *testing.T) {
	good := testKinds()[0]
	for name, k := range map[string]Kind{
		"no New":      {GroupVersion: good.GroupVersion, Kind: "X", Resource: "xs"},
		"no resource": {GroupVersion: good.GroupVersion, Kind: "X", New: good.New},
		"not a named struct": {GroupVersion: good.GroupVersion, Kind: "X", Resource: "xs",
			New: func() runtime.Object { return &metav1.List{} }, NewList: func() runtime.Object { return &struct{ metav1.List }{} }},
	} {
		if _, err := V3(good.GroupVersion, []Kind{k}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := V3(good.GroupVersion, []Kind{good, good}); err == nil {
		t.Error("two kinds on one path: no error")
	}

	// Without NewList there are no list operations, the rest is there.
	noList := good
	noList.NewList = nil
	_, doc := func() ([]byte, *spec3.OpenAPI) {
		raw, err := V3(good.GroupVersion, []Kind{noList})
		if err != nil {
			t.Fatal(err)
		}
		doc := &spec3.OpenAPI{}
		if err := json.Unmarshal(raw, doc); err != nil {
			t.Fatal(err)
		}
		return raw, doc
	}()
	if coll := doc.Paths.Paths["/api/v1/namespaces/{namespace}/configmaps"]; coll == nil || coll.Get != nil || coll.Post == nil {
		t.Errorf("collection without NewList: %+v", coll)
	}
	if !supportsFieldValidation(doc, good.GroupVersion.WithKind("ConfigMap")) {
		t.Error("no PATCH with fieldValidation without NewList")
	}

	// A group/version with no kinds still gets a valid document.
	raw, err := V3(schema.GroupVersion{Group: "batch", Version: "v1"}, testKinds())
	if err != nil || !json.Valid(raw) {
		t.Errorf("empty group/version: %v", err)
	}
}

func TestNames(t *testing.T) {
	for gv, want := range map[schema.GroupVersion][2]string{
		{Version: "v1"}:                                        {"CoreV1", "core_v1"},
		{Group: "apps", Version: "v1"}:                         {"AppsV1", "apps_v1"},
		{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {"RbacAuthorizationV1", "rbacAuthorization_v1"},
		{Group: "example.com", Version: "v1alpha1"}:            {"ExampleComV1alpha1", "exampleCom_v1alpha1"},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {"FlowcontrolApiserverV1", "flowcontrolApiserver_v1"},
	} {
		if got := operationGV(gv); got != want[0] {
			t.Errorf("operationGV(%s) = %s, want %s", gv, got, want[0])
		}
		if got := operationTag(gv); got != want[1] {
			t.Errorf("operationTag(%s) = %s, want %s", gv, got, want[1])
		}
	}
	type local struct{}
	if got := definitionName(reflect.TypeOf(local{})); got != "com.github.apichain.apichain.pkg.openapi.local" {
		t.Errorf("definitionName = %s", got)
	}
	if got := definitionName(reflect.TypeOf(corev1.ConfigMap{})); got != "io.k8s.api.core.v1.ConfigMap" {
		t.Errorf("definitionName = %s", got)
	}
}
