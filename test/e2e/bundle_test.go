package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBundleMatchesKube applies the web bundle with unmodified kubectl (client-side apply) and
// compares every object read back with what kube-apiserver 1.37.2 answered for the same
// bundle (testdata/kube-1.37/bundle-client-side-apply.json, recorded with
// `kubectl apply -f` then `kubectl get ... -o json` on the reference build): spec, status,
// labels, annotations and finalizers, all defaulted and admitted fields included. Only what
// differs by nature is left out: identities, times, resource versions, managed fields, and
// the cluster IP the allocator picked.
func TestBundleMatchesKube(t *testing.T) {
	c, _ := startAllInOne(t)
	kc := filepath.Join(c.dataDir(), "admin.kubeconfig")
	bundle := filepath.Join(t.TempDir(), "bundle.yaml")
	require.NoError(t, os.WriteFile(bundle, []byte(webBundle), 0o600))
	out, err := kubectl(t, kc, "create", "namespace", "shop")
	require.NoError(t, err, out)
	out, err = kubectl(t, kc, "apply", "-f", bundle)
	require.NoError(t, err, out)

	data, err := os.ReadFile("testdata/kube-1.37/bundle-client-side-apply.json")
	require.NoError(t, err)
	var recorded struct{ Items []map[string]any }
	require.NoError(t, json.Unmarshal(data, &recorded))
	require.Len(t, recorded.Items, 11)
	for _, want := range recorded.Items {
		kind := want["kind"].(string)
		name := want["metadata"].(map[string]any)["name"].(string)
		t.Run(kind, func(t *testing.T) {
			out, err := kubectl(t, kc, "get", strings.TrimSuffix(strings.ToLower(kind)+"."+group(want["apiVersion"].(string)), "."), name, "-n", "shop", "-o", "json")
			require.NoError(t, err, out)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			comparable(got)
			comparable(want)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("%s %s differs from kube's:\n got %s\nkube %s", kind, name, g, w)
			}
		})
	}
}

// group is the API group of an apiVersion ("" for v1), as kubectl's kind.group argument.
func group(apiVersion string) string {
	g, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return g
}

// comparable drops what two servers never share: identities, times, versions, field
// ownership, and the allocated cluster IP.
func comparable(o map[string]any) {
	md := o["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		delete(md, k)
	}
	if spec, ok := o["spec"].(map[string]any); ok && o["kind"] == "Service" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
}
