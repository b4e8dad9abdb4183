package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
`

// kubectl manages CustomResourceDefinitions on the extensions service as on kube: kube's
// defaulting, validation messages (recorded from kube-apiserver 1.37.2), columns, the names
// and Established conditions, stored versions, and deletion through Terminating.
func TestKubectlCRDs(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}

	out := k.run("api-resources", "--api-group=apiextensions.k8s.io")
	assert.Regexp(t, `(?m)^customresourcedefinitions\s+crd,crds\s+apiextensions.k8s.io/v1\s+false\s+CustomResourceDefinition$`, out)
	assert.Contains(t, k.run("create", "-f", file("widgets.yaml", widgetCRD)), "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created")
	waitEstablished(t, k.kubeconfig, "widgets.example.com")
	out = k.run("get", "crd", "widgets.example.com", "-o", "wide")
	assert.Regexp(t, `(?m)^NAME\s+SCOPE\s+VERSIONS\s+CREATED AT\s+GROUP\s+KIND\s+SHORTNAMES\s+ESTABLISHED$`, out)
	assert.Regexp(t, `(?m)^widgets.example.com\s+Namespaced\s+v1\(storage\)\s+\d{4}-\d\d-\d\dT\S+Z\s+example.com\s+Widget\s+wd\s+true$`, out)
	assert.Equal(t, `widget WidgetList None ["v1"] 1 NoConflicts`,
		k.run("get", "crd", "widgets.example.com", "-o", `jsonpath={.status.acceptedNames.singular} {.status.acceptedNames.listKind} `+
			`{.spec.conversion.strategy} {.status.storedVersions} {.metadata.generation} {.status.conditions[?(@.type=="NamesAccepted")].reason}`))

	// A second CRD of the group wanting a taken kind is not accepted, with kube's reason.
	k.run("create", "-f", file("gadgets.yaml", strings.NewReplacer("widgets.example.com", "gadgets.example.com", "plural: widgets", "plural: gadgets",
		"shortNames: [wd]", "shortNames: [gd]").Replace(widgetCRD)))
	require.Eventually(t, func() bool {
		out, _ := kubectl(t, k.kubeconfig, "get", "crd", "gadgets.example.com", "-o",
			`jsonpath={.status.conditions[?(@.type=="NamesAccepted")].message}/{.status.conditions[?(@.type=="Established")].reason}`)
		return out == `"WidgetList" is already in use/NotAccepted`
	}, 5*time.Second, 20*time.Millisecond)

	// kube's validation of the CRD itself, word for word as kube-apiserver 1.37.2 answers.
	out = k.fails("apply", "-f", file("bad.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: wrongname.example.com
spec:
  group: example.com
  names: {plural: things, kind: Thing}
  scope: Sideways
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-validations: [{rule: "self.spec.size >"}]}
`))
	assert.Contains(t, out, `The CustomResourceDefinition "wrongname.example.com" is invalid: 
* metadata.name: Invalid value: "wrongname.example.com": must be spec.names.plural+"."+spec.group
* spec.scope: Unsupported value: "Sideways": supported values: "Cluster", "Namespaced"
* spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.spec.size \u003e","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting`)
	out = k.fails("apply", "-f", file("nostorage.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {plural: things, kind: Thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object}
`))
	assert.Equal(t, `The CustomResourceDefinition "things.example.com" is invalid: 
* spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must have exactly one version marked as storage version
* status.storedVersions: Invalid value: null: must have at least one stored version
`, out)

	// A spec change bumps the generation and the accepted names follow; a new storage version
	// joins the stored ones.
	k.run("patch", "crd", "widgets.example.com", "--type=merge", "-p", `{"spec":{"names":{"shortNames":["wd","wdg"]}}}`)
	require.Eventually(t, func() bool {
		out, _ := kubectl(t, k.kubeconfig, "get", "crd", "widgets.example.com", "-o", "jsonpath={.metadata.generation} {.status.acceptedNames.shortNames}")
		return out == `2 ["wd","wdg"]`
	}, 5*time.Second, 20*time.Millisecond)
	k.run("patch", "crd", "widgets.example.com", "--type=json", "-p", `[{"op":"replace","path":"/spec/versions/0/storage","value":false},`+
		`{"op":"add","path":"/spec/versions/-","value":{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}}]`)
	assert.Equal(t, `["v1","v2"] v1,v2(storage)`, k.run("get", "crd", "widgets.example.com", "-o", `jsonpath={.status.storedVersions} `)+
		strings.Fields(k.run("get", "crd", "widgets.example.com", "--no-headers"))[2])

	// Deletion goes through the cleanup finalizer and is then complete.
	assert.Contains(t, k.run("delete", "crd", "gadgets.example.com"), `customresourcedefinition.apiextensions.k8s.io "gadgets.example.com" deleted`)
	require.Eventually(t, func() bool {
		out, err := kubectl(t, k.kubeconfig, "get", "crd", "gadgets.example.com")
		return err != nil && strings.Contains(out, "NotFound")
	}, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, k.run("get", "crds"), "widgets.example.com")
}

// Custom resources are served once their CRD is established, through kubectl and client-go's
// dynamic client, with kube's schema semantics; deleting the CRD ends open watches, deletes
// the custom resources and removes the API.
func TestCustomResources(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(c.config)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	k.run("create", "namespace", "w")

	// A custom resource is served within a second of its CRD's creation.
	k.run("create", "-f", file("widgets.yaml", widgetCRD))
	created := time.Now()
	w1 := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "labels": map[string]any{"tier": "gold"}}, "spec": map[string]any{"size": int64(2)}}}
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(widgets).Namespace("w").Create(ctx, w1, metav1.CreateOptions{})
		return err == nil
	}, 5*time.Second, 5*time.Millisecond)
	t.Logf("first custom resource created %s after its CRD", time.Since(created).Round(time.Millisecond))

	out := k.run("get", "wd", "-n", "w")
	assert.Regexp(t, `(?m)^NAME\s+AGE$`, out)
	assert.Regexp(t, `(?m)^w1\s+\d+s$`, out)
	assert.Contains(t, k.run("get", "widgets", "-n", "w", "-l", "tier=gold", "-o", "name"), "widget.example.com/w1")
	assert.Regexp(t, `(?m)^widgets\s+wd\s+example.com/v1\s+true\s+Widget$`, k.run("api-resources", "--api-group=example.com"))

	// kube's schema semantics, as kube-apiserver 1.37.2 words them.
	out = k.fails("apply", "-f", file("unknown.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: w}\nspec: {size: 2, unknown: x}\n"))
	assert.Contains(t, out, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.unknown"`)
	out = k.run("apply", "--validate=warn", "-f", filepath.Join(dir, "unknown.yaml"))
	assert.Contains(t, out, `Warning: unknown field "spec.unknown"`)
	assert.Equal(t, `{"size":2}`, k.run("get", "widget", "w2", "-n", "w", "-o", "jsonpath={.spec}"), "unknown fields are pruned")
	out = k.fails("apply", "-f", file("invalid.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, namespace: w}\nspec: {size: 0}\n"))
	assert.Contains(t, out, `The Widget "w3" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`)
	k.run("patch", "widget", "w1", "-n", "w", "--type=merge", "-p", `{"spec":{"size":5}}`)
	assert.Equal(t, "5 2", k.run("get", "widget", "w1", "-n", "w", "-o", "jsonpath={.spec.size} {.metadata.generation}"))
	out = k.fails("patch", "widget", "w1", "-n", "w", "--type=strategic", "-p", `{"spec":{"size":6}}`)
	assert.Contains(t, out, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
	assert.Contains(t, k.run("apply", "--server-side", "-f", file("ssa.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w4, namespace: w}\nspec: {size: 7}\n")),
		"widget.example.com/w4 serverside-applied")

	// Another served version (conversion None) serves the same objects under its apiVersion.
	k.run("patch", "crd", "widgets.example.com", "--type=json", "-p", `[{"op":"add","path":"/spec/versions/-","value":`+
		`{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}]`)
	widgetsV2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	require.Eventually(t, func() bool {
		got, err := dyn.Resource(widgetsV2).Namespace("w").Get(ctx, "w1", metav1.GetOptions{})
		return err == nil && got.GetAPIVersion() == "example.com/v2" && got.GetUID() != ""
	}, 5*time.Second, 20*time.Millisecond, "v2 serves the objects as example.com/v2")

	// A watch open while the CRD is deleted ends; the custom resources and the API go.
	watch, err := dyn.Resource(widgets).Namespace("w").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer watch.Stop()
	k.run("delete", "crd", "widgets.example.com")
	ended := false
	for deadline := time.After(10 * time.Second); !ended; {
		select {
		case _, open := <-watch.ResultChan():
			ended = !open
		case <-deadline:
			t.Fatal("the watch did not end with its CRD")
		}
	}
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(widgets).Namespace("w").List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err)
	}, 5*time.Second, 20*time.Millisecond, "the API goes with its CRD")
	k.run("create", "-f", filepath.Join(dir, "widgets.yaml"))
	waitEstablished(t, k.kubeconfig, "widgets.example.com")
	require.Eventually(t, func() bool {
		list, err := dyn.Resource(widgets).Namespace("w").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	}, 5*time.Second, 20*time.Millisecond, "the custom resources were deleted with the CRD")
}

// Printer columns, categories, defaults and the status subresource of a custom resource, as
// kubectl shows them on kube-apiserver 1.37.2.
func TestCustomResourceColumnsAndStatus(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	crdFile, crFile := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "g1.yaml")
	writeFile(t, crdFile, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {plural: gadgets, kind: Gadget, categories: [all]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Size, type: integer, jsonPath: .spec.size, priority: 1}
    - {name: Ready, type: boolean, jsonPath: .status.ready}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string, default: blue}
              size: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
`)
	writeFile(t, crFile, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: w}\nspec: {size: 3}\n")
	k.run("create", "namespace", "w")
	k.run("create", "-f", crdFile)
	waitEstablished(t, k.kubeconfig, "gadgets.example.com")
	require.Eventually(t, func() bool { _, err := kubectl(t, k.kubeconfig, "apply", "-f", crFile); return err == nil }, 5*time.Second, 20*time.Millisecond)

	out := k.run("get", "gadgets", "-n", "w", "-o", "wide")
	assert.Regexp(t, `(?m)^NAME\s+COLOR\s+SIZE\s+READY\s+AGE$`, out)
	assert.Regexp(t, `(?m)^g1\s+blue\s+3\s+\d+s$`, out, "the default applies; no status yet")
	out = k.run("get", "all", "-n", "w")
	assert.Regexp(t, `(?m)^gadget.example.com/g1\s+blue\s+\d+s$`, out, "category all, without the priority column")

	// Status only through its subresource.
	k.run("patch", "gadget", "g1", "-n", "w", "--type=merge", "-p", `{"status":{"ready":true}}`)
	assert.Empty(t, k.run("get", "gadget", "g1", "-n", "w", "-o", "jsonpath={.status.ready}"))
	k.run("patch", "gadget", "g1", "-n", "w", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":true},"spec":{"size":9}}`)
	assert.Equal(t, "true 3 1", k.run("get", "gadget", "g1", "-n", "w", "-o", "jsonpath={.status.ready} {.spec.size} {.metadata.generation}"))
	assert.Regexp(t, `(?m)^g1\s+blue\s+true\s+\d+s$`, k.run("get", "gadgets", "-n", "w"))
}

// kubectl scale on a custom resource with a scale subresource, and field selectors on its
// selectableFields, as on kube-apiserver 1.37.2.
func TestCustomResourceScaleAndSelectableFields(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	crdFile, crFile := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "pools.yaml")
	writeFile(t, crdFile, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pools.example.com
spec:
  group: example.com
  names: {plural: pools, kind: Pool}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              color: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
`)
	writeFile(t, crFile, `apiVersion: example.com/v1
kind: Pool
metadata: {name: p1, namespace: w}
spec: {replicas: 1, color: red}
---
apiVersion: example.com/v1
kind: Pool
metadata: {name: p2, namespace: w}
spec: {replicas: 1, color: blue}
`)
	k.run("create", "namespace", "w")
	k.run("create", "-f", crdFile)
	waitEstablished(t, k.kubeconfig, "pools.example.com")
	require.Eventually(t, func() bool { _, err := kubectl(t, k.kubeconfig, "apply", "-f", crFile); return err == nil }, 5*time.Second, 20*time.Millisecond)

	assert.Contains(t, k.run("scale", "pool", "p1", "-n", "w", "--replicas=4"), "pool.example.com/p1 scaled")
	assert.Equal(t, "4 2", k.run("get", "pool", "p1", "-n", "w", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"))
	k.run("patch", "pool", "p1", "-n", "w", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3,"selector":"app=p1"}}`)
	scale := k.run("get", "--raw", "/apis/example.com/v1/namespaces/w/pools/p1/scale")
	assert.Contains(t, scale, `"spec":{"replicas":4},"status":{"replicas":3,"selector":"app=p1"}`)

	assert.Equal(t, "pool.example.com/p2", strings.TrimSpace(k.run("get", "pools", "-n", "w", "--field-selector", "spec.color=blue", "-o", "name")))
	assert.Contains(t, k.fails("get", "pools", "-n", "w", "--field-selector", "spec.size=1"), "field label not supported: spec.size")
}

// A dynamic informer on a custom resource lists in pages and follows its watch, as operators
// built on client-go do.
func TestCustomResourceDynamicInformer(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	crd := filepath.Join(t.TempDir(), "crd.yaml")
	writeFile(t, crd, widgetCRD)
	k.run("create", "namespace", "w")
	k.run("create", "-f", crd)
	waitEstablished(t, k.kubeconfig, "widgets.example.com")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(c.config)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(name string, size int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size}}}
	}
	for i := range 25 {
		name := fmt.Sprintf("pre-%02d", i)
		require.Eventually(t, func() bool {
			_, err := dyn.Resource(gvr).Namespace("w").Create(ctx, widget(name, 1), metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err)
		}, 5*time.Second, 10*time.Millisecond)
	}
	// Pagination, as the informer's reflector lists with a limit.
	page, err := dyn.Resource(gvr).Namespace("w").List(ctx, metav1.ListOptions{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, page.Items, 10)
	assert.NotEmpty(t, page.GetContinue())

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "w", nil)
	informer := factory.ForResource(gvr).Informer()
	var mu sync.Mutex
	seen := map[string]int64{}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			u := o.(*unstructured.Unstructured)
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			mu.Lock()
			seen[u.GetName()] = size
			mu.Unlock()
		},
		UpdateFunc: func(_, o any) {
			u := o.(*unstructured.Unstructured)
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			mu.Lock()
			seen[u.GetName()] = size
			mu.Unlock()
		},
		DeleteFunc: func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				mu.Lock()
				delete(seen, u.GetName())
				mu.Unlock()
			}
		},
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	mu.Lock()
	assert.Len(t, seen, 25)
	mu.Unlock()

	_, err = dyn.Resource(gvr).Namespace("w").Create(ctx, widget("live", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = dyn.Resource(gvr).Namespace("w").Patch(ctx, "pre-00", types.MergePatchType, []byte(`{"spec":{"size":7}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, dyn.Resource(gvr).Namespace("w").Delete(ctx, "pre-01", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, gone := seen["pre-01"]
		return seen["live"] == 2 && seen["pre-00"] == 7 && !gone
	}, 10*time.Second, 20*time.Millisecond, "the informer follows creates, updates and deletes")
}

// A custom resource held by its own finalizer holds its CRD's deletion: the CRD is
// Terminating, new custom resources are refused with kube's 405, and once the finalizer goes
// both are gone.
func TestCRDDeletionWaitsForCustomResources(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "crd.yaml"), widgetCRD)
	writeFile(t, filepath.Join(dir, "held.yaml"), "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: held, namespace: w, finalizers: [example.com/hold]}\nspec: {size: 1}\n")
	writeFile(t, filepath.Join(dir, "late.yaml"), "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: late, namespace: w}\nspec: {size: 1}\n")
	k.run("create", "namespace", "w")
	k.run("create", "-f", filepath.Join(dir, "crd.yaml"))
	waitEstablished(t, k.kubeconfig, "widgets.example.com")
	require.Eventually(t, func() bool {
		_, err := kubectl(t, k.kubeconfig, "create", "-f", filepath.Join(dir, "held.yaml"))
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)

	k.run("delete", "crd", "widgets.example.com", "--wait=false")
	require.Eventually(t, func() bool {
		out, _ := kubectl(t, k.kubeconfig, "get", "crd", "widgets.example.com", "-o",
			`jsonpath={.status.conditions[?(@.type=="Terminating")].status}/{.status.conditions[?(@.type=="Terminating")].reason}`)
		return out == "True/InstanceDeletionCheck"
	}, 10*time.Second, 20*time.Millisecond, "Terminating while a custom resource holds on")
	assert.Contains(t, k.fails("create", "-f", filepath.Join(dir, "late.yaml")), "create not allowed while custom resource definition is terminating")

	k.run("patch", "widget", "held", "-n", "w", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	require.Eventually(t, func() bool {
		out, err := kubectl(t, k.kubeconfig, "get", "crd", "widgets.example.com")
		return err != nil && strings.Contains(out, "NotFound")
	}, 10*time.Second, 20*time.Millisecond, "the CRD goes once its last custom resource is gone")
}

// NamespaceLifecycle admission runs on the extensions service too: a custom resource in a
// namespace that does not exist is refused with the namespace's 404, one in a terminating
// namespace with kube's 403 and cause, as kube-apiserver refuses them.
func TestCustomResourcesNeedALiveNamespace(t *testing.T) {
	c, _ := startAllInOne(t)
	k := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}
	k.run("create", "-f", file("widgets.yaml", widgetCRD))
	waitEstablished(t, k.kubeconfig, "widgets.example.com")
	widget := func(namespace string) string {
		return file("w-"+namespace+".yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: "+namespace+"}\nspec: {size: 1}\n")
	}

	assert.Contains(t, k.fails("create", "-f", widget("nope")), `namespaces "nope" not found`)

	// A namespace held in Terminating by a finalizer on its content.
	k.run("create", "namespace", "ending")
	k.run("create", "-f", file("held.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: ending, finalizers: [example.com/hold]}\n"))
	k.run("create", "-f", widget("ending"))
	k.run("delete", "namespace", "ending", "--wait=false")
	dyn := dynamic.NewForConfigOrDie(c.config)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	late := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "late"}, "spec": map[string]any{"size": int64(1)}}}
	var err error
	require.Eventually(t, func() bool {
		_, err = dyn.Resource(widgets).Namespace("ending").Create(context.Background(), late, metav1.CreateOptions{})
		return apierrors.IsForbidden(err)
	}, 10*time.Second, 20*time.Millisecond, "a create in a terminating namespace is refused: %v", err)
	assert.Equal(t, `widgets.example.com "late" is forbidden: unable to create new content in namespace ending because it is being terminated`, err.Error())
	st := err.(apierrors.APIStatus).Status()
	require.NotNil(t, st.Details)
	assert.Contains(t, st.Details.Causes, metav1.StatusCause{Type: "NamespaceTerminating", Message: "namespace ending is being terminated", Field: "metadata.namespace"})

	// Its content goes with it, and then so does the namespace.
	k.run("patch", "configmap", "held", "-n", "ending", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(namespaces).Get(context.Background(), "ending", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 50*time.Millisecond)
	assert.Contains(t, k.fails("create", "-f", widget("ending")), `namespaces "ending" not found`)
}
