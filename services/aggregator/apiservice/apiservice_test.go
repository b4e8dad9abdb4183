package apiservice

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/embedded/embeddedtest"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

var apiservices, crds *registry.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	endpoints, stop, err := embeddedtest.Etcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	client, err := storage.NewClient(endpoints, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	store := storage.NewStore(client, storage.DefaultPrefix)
	stopping := make(chan struct{})
	defer close(stopping)
	s1, err := registry.NewScheme(apiregistration.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s2, err := registry.NewScheme(apiextensionsv1.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	apiservices = registry.NewClient(registry.NewHandler(s1, registry.NewSet(Resource()), store, stopping))
	crds = registry.NewClient(registry.NewHandler(s2, registry.NewSet(CustomResourceDefinitions()), store, stopping))
	return m.Run()
}

func lookup(c *registry.Client, resource string) *registry.Resource {
	for _, r := range c.Resources() {
		if r.Name == resource {
			return r
		}
	}
	panic(resource)
}

// The registration decides as kube's autoregister does; each step is one pass.
func TestAutoRegister(t *testing.T) {
	ctx := context.Background()
	as, cs := lookup(apiservices, "apiservices"), lookup(crds, "customresourcedefinitions")
	create := func(name, group, version, managed string, groupPriority int32) {
		t.Helper()
		a := &apiregistration.APIService{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiregistration.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: groupPriority, VersionPriority: 1}}
		if managed != "" {
			a.Labels = map[string]string{apiregistration.AutomanagedLabel: managed}
		}
		require.NoError(t, apiservices.Create(ctx, as, "", a))
	}
	get := func(name string) *apiregistration.APIService {
		o, err := apiservices.Get(ctx, as, "", name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		return o.(*apiregistration.APIService)
	}
	// Before the first start: a version no longer built in, a built-in one changed, and the user's.
	create("v1beta1.apps", "apps", "v1beta1", apiregistration.AutomanagedOnStart, 17800)
	create("v1.batch", "batch", "v1", apiregistration.AutomanagedOnStart, 5)
	create("v1.mine.example.com", "mine.example.com", "v1", "", 100)

	a := NewAutoRegister(apiservices, crds, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pass := func() { t.Helper(); require.NoError(t, a.pass(ctx, as, cs)) }
	pass()
	for gv, p := range apiregistration.Builtin {
		got := get(apiregistration.Name(gv))
		require.NotNil(t, got, gv.String())
		assert.Equal(t, []int32{p.Group, p.Version}, []int32{got.Spec.GroupPriorityMinimum, got.Spec.VersionPriority}, gv.String())
		assert.Equal(t, apiregistration.AutomanagedOnStart, got.Labels[apiregistration.AutomanagedLabel])
	}
	assert.Nil(t, get("v1beta1.apps"), "no longer built in: removed at start")
	assert.NotNil(t, get("v1.mine.example.com"), "the user's stays")

	// After the start a deleted built-in one stays deleted, as in kube.
	_, err := apiservices.Delete(ctx, as, "", "v1.apps", nil)
	require.NoError(t, err)
	pass()
	assert.Nil(t, get("v1.apps"))

	// A CRD's served versions, for as long as it serves them.
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.ar.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "ar.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true}, {Name: "v1beta1", Served: true}, {Name: "v1alpha1"}}}}
	require.NoError(t, crds.Create(ctx, cs, "", crd))
	pass()
	for _, v := range []string{"v1", "v1beta1"} {
		got := get(v + ".ar.example.com")
		require.NotNil(t, got, v)
		assert.Equal(t, apiregistration.AutomanagedTrue, got.Labels[apiregistration.AutomanagedLabel])
		assert.Equal(t, []int32{1000, 100}, []int32{got.Spec.GroupPriorityMinimum, got.Spec.VersionPriority})
	}
	assert.Nil(t, get("v1alpha1.ar.example.com"), "not served")
	_, err = apiservices.Delete(ctx, as, "", "v1beta1.ar.example.com", nil)
	require.NoError(t, err)
	pass()
	assert.NotNil(t, get("v1beta1.ar.example.com"), "a CRD's comes back")

	require.NoError(t, crds.Update(ctx, cs, "", crd.Name, "", func(o runtime.Object) {
		o.(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[1].Served = false
	}))
	pass()
	assert.Nil(t, get("v1beta1.ar.example.com"), "no longer served")
	assert.NotNil(t, get("v1.ar.example.com"))
	_, err = crds.Delete(ctx, cs, "", crd.Name, nil)
	require.NoError(t, err)
	pass()
	assert.Nil(t, get("v1.ar.example.com"), "its CRD is gone")
	assert.NotNil(t, get("v1.mine.example.com"))
}

// Kube's validation, path by path.
func TestValidate(t *testing.T) {
	port := int32(0)
	for _, tc := range []struct {
		name string
		a    apiregistration.APIService
		want []string
	}{
		{"valid local", apiregistration.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.io"},
			Spec: apiregistration.APIServiceSpec{Group: "a.io", Version: "v1", GroupPriorityMinimum: 1, VersionPriority: 1}}, nil},
		{"valid remote", apiregistration.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.io"},
			Spec: apiregistration.APIServiceSpec{Group: "a.io", Version: "v1", GroupPriorityMinimum: 20000, VersionPriority: 1000,
				Service: &apiregistration.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](443)}, CABundle: []byte("x")}}, nil},
		{"remote with both", apiregistration.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.io"},
			Spec: apiregistration.APIServiceSpec{Group: "a.io", Version: "v1", GroupPriorityMinimum: 1, VersionPriority: 1, InsecureSkipTLSVerify: true,
				Service: &apiregistration.ServiceReference{Namespace: "ns", Name: "svc", Port: &port}, CABundle: []byte("x")}},
			[]string{"spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
				"spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"}},
		{"local skips TLS", apiregistration.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.io"},
			Spec: apiregistration.APIServiceSpec{Group: "a.io", Version: "v1", GroupPriorityMinimum: 1, VersionPriority: 1, InsecureSkipTLSVerify: true}},
			[]string{"spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range validate(&tc.a) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
