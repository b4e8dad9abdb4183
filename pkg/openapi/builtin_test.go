package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	protoopenapi "k8s.io/kube-openapi/pkg/util/proto"
)

// builtinKinds returns a Kind for every top-level kind (with ObjectMeta and
// a List) of the GA k8s.io/api groups.
func builtinKinds(t *testing.T) []Kind {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		admissionregistrationv1.AddToScheme, appsv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme,
		batchv1.AddToScheme, certificatesv1.AddToScheme, coordinationv1.AddToScheme, corev1.AddToScheme,
		discoveryv1.AddToScheme, eventsv1.AddToScheme, flowcontrolv1.AddToScheme, networkingv1.AddToScheme,
		nodev1.AddToScheme, policyv1.AddToScheme, rbacv1.AddToScheme, resourcev1.AddToScheme,
		schedulingv1.AddToScheme, storagev1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	objectMeta := reflect.TypeOf(metav1.ObjectMeta{})
	all := scheme.AllKnownTypes()
	var kinds []Kind
	for gvk, typ := range all {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if f, ok := typ.FieldByName("ObjectMeta"); !ok || f.Type != objectMeta {
			continue
		}
		listType, ok := all[gvk.GroupVersion().WithKind(gvk.Kind+"List")]
		if !ok {
			continue
		}
		typ := typ
		kinds = append(kinds, Kind{
			GroupVersion: gvk.GroupVersion(), Kind: gvk.Kind, Resource: strings.ToLower(gvk.Kind) + "s", Namespaced: true,
			Subresources: []string{"status", "scale"},
			New:          func() runtime.Object { return reflect.New(typ).Interface().(runtime.Object) },
			NewList:      func() runtime.Object { return reflect.New(listType).Interface().(runtime.Object) },
		})
	}
	sort.Slice(kinds, func(i, j int) bool {
		return kinds[i].GroupVersion.WithKind(kinds[i].Kind).String() < kinds[j].GroupVersion.WithKind(kinds[j].Kind).String()
	})
	if len(kinds) < 50 {
		t.Fatalf("only %d built-in kinds found", len(kinds))
	}
	return kinds
}

// TestBuiltinKinds builds the documents of every GA built-in kind: no
// reflection gaps, no two Go types on one definition name, parseable by
// spec3, gnostic and kube-openapi's proto models.
func TestBuiltinKinds(t *testing.T) {
	kinds := builtinKinds(t)
	gvs := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		gvs[k.GroupVersion] = true
	}
	docs := map[schema.GroupVersion][]byte{}
	for gv := range gvs {
		raw, err := V3(gv, kinds)
		if err != nil {
			t.Fatalf("V3(%s): %v", gv, err)
		}
		docs[gv] = raw
		doc := &spec3.OpenAPI{}
		if err := json.Unmarshal(raw, doc); err != nil {
			t.Fatalf("V3(%s) does not parse: %v", gv, err)
		}
		for _, k := range kinds {
			if k.GroupVersion == gv && !supportsFieldValidation(doc, gv.WithKind(k.Kind)) {
				t.Errorf("%s: kubectl would not find fieldValidation", gv.WithKind(k.Kind))
			}
		}
	}
	if _, err := V3Index(docs); err != nil {
		t.Fatal(err)
	}
	raw, err := V2(kinds)
	if err != nil {
		t.Fatalf("V2: %v", err)
	}
	doc, err := openapiv2.ParseDocument(raw)
	if err != nil {
		t.Fatalf("gnostic cannot parse V2: %v", err)
	}
	models, err := protoopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	found := 0
	for _, name := range models.ListModels() {
		found += len(gvksOf(models.LookupModel(name)))
	}
	if found < 2*len(kinds) {
		t.Errorf("only %d models carry a gvk for %d kinds", found, len(kinds))
	}
}
