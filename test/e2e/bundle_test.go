package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBundleMatchesKube applies two bundles with unmodified kubectl (client-side apply) and
// compares every object read back with what kube-apiserver 1.37.2 answered for the same
// bundle (testdata/kube-1.37/*-client-side-apply.json, recorded with `kubectl apply -f` then
// `kubectl get ... -o json` on the reference build): spec, status,
// labels, annotations and finalizers, all defaulted and admitted fields included. Only what
// differs by nature is left out: identities, times, resource versions, managed fields, and
// the cluster IP the allocator picked.
func TestBundleMatchesKube(t *testing.T) {
	c, _ := startAllInOne(t)
	kc := filepath.Join(c.dataDir(), "admin.kubeconfig")
	platform, err := os.ReadFile("testdata/platform-bundle.yaml")
	require.NoError(t, err)
	for _, b := range []struct {
		name, namespace, manifests, recorded string
		objects                              int
	}{
		{"web", "shop", webBundle, "testdata/kube-1.37/bundle-client-side-apply.json", 11},
		// a platform bundle: StatefulSet with claim templates, DaemonSet on the host network,
		// indexed Job, quota, limits, RBAC, budget and policy, a PriorityClass
		{"platform", "platform", string(platform), "testdata/kube-1.37/platform-client-side-apply.json", 14},
	} {
		t.Run(b.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bundle.yaml")
			require.NoError(t, os.WriteFile(file, []byte(b.manifests), 0o600))
			out, err := kubectl(t, kc, "create", "namespace", b.namespace)
			require.NoError(t, err, out)
			out, err = kubectl(t, kc, "apply", "-f", file)
			require.NoError(t, err, out)
			data, err := os.ReadFile(b.recorded)
			require.NoError(t, err)
			var recorded struct{ Items []map[string]any }
			require.NoError(t, json.Unmarshal(data, &recorded))
			require.Len(t, recorded.Items, b.objects)
			for _, want := range recorded.Items {
				kind := want["kind"].(string)
				md := want["metadata"].(map[string]any)
				name, _ := md["name"].(string)
				ns, _ := md["namespace"].(string)
				t.Run(kind, func(t *testing.T) {
					args := []string{"get", strings.TrimSuffix(strings.ToLower(kind)+"."+group(want["apiVersion"].(string)), "."), name, "-o", "json"}
					if ns != "" {
						args = append(args, "-n", ns)
					}
					out, err := kubectl(t, kc, args...)
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
			// A re-apply of the unchanged bundle writes nothing, client-side or server-side, as on
			// kube: the second apply runs in a later second than the first, so that a managed
			// field's time is all that could change.
			versions := func() string {
				out, err := kubectl(t, kc, "get", "-f", file, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}`)
				require.NoError(t, err, out)
				return out
			}
			applied := versions()
			nextSecond(t)
			out, err = kubectl(t, kc, "apply", "-f", file)
			require.NoError(t, err, out)
			assert.Equal(t, applied, versions(), "a client-side re-apply writes nothing")
			out, err = kubectl(t, kc, "apply", "--server-side", "--force-conflicts", "-f", file)
			require.NoError(t, err, out)
			applied = versions()
			nextSecond(t)
			out, err = kubectl(t, kc, "apply", "--server-side", "--force-conflicts", "-f", file)
			require.NoError(t, err, out)
			assert.Equal(t, applied, versions(), "a server-side re-apply writes nothing")
		})
	}
}

// nextSecond returns once the clock is in a later second than when it was called.
func nextSecond(t *testing.T) {
	start := time.Now().Unix()
	require.Eventually(t, func() bool { return time.Now().Unix() > start }, 3*time.Second, 20*time.Millisecond)
}

// group is the API group of an apiVersion ("" for v1), as kubectl's kind.group argument.
func group(apiVersion string) string {
	g, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return g
}

// comparable drops what two servers never share: identities (the object's UID wherever it is
// used), times, versions, field ownership, the allocated cluster IP, and a ResourceQuota's status (kube-controller-manager's
// work, which apichain does in core and a bare kube-apiserver leaves empty).
func comparable(o map[string]any) {
	md := o["metadata"].(map[string]any)
	if uid, ok := md["uid"].(string); ok {
		replaceString(o, uid, "<uid>") // a job's generated selector and labels name it
	}
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		delete(md, k)
	}
	if spec, ok := o["spec"].(map[string]any); ok && o["kind"] == "Service" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	if o["kind"] == "ResourceQuota" {
		delete(o, "status")
	}
}

// replaceString replaces every string value old in v (maps and lists, in place) by new.
func replaceString(v any, old, new string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && s == old {
				x[k] = new
			} else {
				replaceString(e, old, new)
			}
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok && s == old {
				x[i] = new
			} else {
				replaceString(e, old, new)
			}
		}
	}
}

// TestAPIResourcesMatchKube: `kubectl api-resources -o wide` lists every built-in resource of
// kube-apiserver 1.37.2 (testdata/kube-1.37/api-resources-wide.txt) with the same name, short
// names, group/version, scope, kind, verbs and categories.
func TestAPIResourcesMatchKube(t *testing.T) {
	c, _ := startAllInOne(t)
	out, err := kubectl(t, filepath.Join(c.dataDir(), "admin.kubeconfig"), "api-resources", "-o", "wide")
	require.NoError(t, err, out)
	data, err := os.ReadFile("testdata/kube-1.37/api-resources-wide.txt")
	require.NoError(t, err)
	rows := func(text string) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(text), "\n")[1:] { // after the header
			if fields := strings.Fields(line); len(fields) > 0 {
				out = append(out, strings.Join(fields, " "))
			}
		}
		return out
	}
	want := rows(string(data))
	require.Len(t, want, 71)
	require.Equal(t, want, rows(out))
}
