package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// grpcurlVersion is the grpcurl the suite installs from the module proxy.
const grpcurlVersion = "v1.9.4"

var grpcurlBuild struct {
	once sync.Once
	err  error
}

// installGrpcurl puts grpcurl in the tests' bin directory (go install, cached by Go's build
// cache) and returns its path.
func installGrpcurl(t *testing.T) string {
	t.Helper()
	grpcurlBuild.once.Do(func() {
		module := "github.com/fullstorydev/grpcurl/cmd/grpcurl@" + grpcurlVersion
		install := exec.Command("go", "install", module)
		install.Dir = os.TempDir()
		install.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOBIN="+bin)
		if out, err := install.CombinedOutput(); err != nil {
			grpcurlBuild.err = fmt.Errorf("go install %s: %v\n%s", module, err, out)
		}
	})
	require.NoError(t, grpcurlBuild.err)
	return binary("grpcurl")
}

// grpcurl runs grpcurl against the gateway with the given TLS and credential flags.
type grpcurl struct {
	t     *testing.T
	bin   string
	addr  string
	flags []string
}

// call runs grpcurl with the request data ("": none) on args after the address (a method, or
// list or describe); exit is grpcurl's exit code (64 + the gRPC code when the call fails).
func (g grpcurl) call(data string, args ...string) (out string, exit int) {
	g.t.Helper()
	argv := append(append([]string{}, g.flags...), "-format-error")
	if data != "" {
		argv = append(argv, "-d", data)
	}
	argv = append(append(argv, g.addr), args...)
	cmd := exec.Command(g.bin, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else {
		require.NoError(g.t, err)
	}
	return stdout.String() + stderr.String(), exit
}

// ok runs a call that must succeed and decodes its answer.
func (g grpcurl) ok(data string, args ...string) map[string]any {
	g.t.Helper()
	out, exit := g.call(data, args...)
	require.Equal(g.t, 0, exit, out)
	var m map[string]any
	require.NoError(g.t, json.Unmarshal([]byte(out), &m), out)
	return m
}

// fails runs a call that must fail with the gRPC code (grpcurl exits 64 + code) and returns
// the kube Status in its details.
func (g grpcurl) fails(code int, data string, args ...string) map[string]any {
	g.t.Helper()
	out, exit := g.call(data, args...)
	require.Equal(g.t, 64+code, exit, out)
	var st struct {
		Code    int
		Details []struct {
			Type       string `json:"@type"`
			StatusJSON []byte `json:"statusJson"`
		}
	}
	require.NoError(g.t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st), out)
	assert.Equal(g.t, code, st.Code)
	for _, d := range st.Details {
		if d.Type == "type.googleapis.com/apichain.resource.v1.KubeStatus" {
			var kube map[string]any
			require.NoError(g.t, json.Unmarshal(d.StatusJSON, &kube))
			return kube
		}
	}
	g.t.Fatalf("no kube Status in the details: %s", out)
	return nil
}

// object is the object in an answer's body (base64 JSON, as protobuf bytes are in JSON).
func object(t *testing.T, answer map[string]any, field string) map[string]any {
	t.Helper()
	body, _ := answer[field].(map[string]any)
	require.NotNil(t, body, "no %s in %v", field, answer)
	data, err := base64.StdEncoding.DecodeString(body["data"].(string))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(data, &obj), string(data))
	return obj
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

const (
	resourceService = "apichain.resource.v1.ResourceService/"
	cmRef           = `"ref":{"version":"v1","resource":"configmaps","namespace":"default"`
)

// The gateway driven by grpcurl alone, as its README shows: reflection, CRUD, pages, apply,
// a watch with its bookmark, discovery, health, and kube's errors as status details.
func TestGRPCurlSuite(t *testing.T) {
	bin := installGrpcurl(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("bob-token,bob,1002\n"), 0o600))
	c, _ := startAllInOne(t, "--token-auth-file", tokens)
	pki := filepath.Join(c.dataDir(), "pki")
	addr := strings.TrimPrefix(c.base, "https://")
	ca := []string{"-cacert", filepath.Join(pki, "ca.crt")}
	admin := grpcurl{t: t, bin: bin, addr: addr, flags: append(ca, "-cert", filepath.Join(pki, "admin.crt"), "-key", filepath.Join(pki, "admin.key"))}
	bob := grpcurl{t: t, bin: bin, addr: addr, flags: append(ca, "-H", "authorization: Bearer bob-token")}
	// A caller who may not read the schema (anonymous, or with a bad token) takes it from a
	// protoset the admin wrote.
	protoset := filepath.Join(t.TempDir(), "apichain.protoset")
	out, exit := grpcurl{t: t, bin: bin, addr: addr, flags: append(append([]string{}, admin.flags...), "-protoset-out", protoset)}.call("", "describe")
	require.Equal(t, 0, exit, out)
	withProtoset := append(append([]string{}, ca...), "-protoset", protoset)
	anonymous := grpcurl{t: t, bin: bin, addr: addr, flags: withProtoset}

	t.Run("reflection", func(t *testing.T) {
		out, exit := admin.call("", "list")
		require.Equal(t, 0, exit, out)
		for _, s := range []string{"apichain.resource.v1.ResourceService", "apichain.discovery.v1.DiscoveryService",
			"apichain.lifecycle.v1.LifecycleService", "grpc.health.v1.Health"} {
			assert.Contains(t, out, s)
		}
		out, exit = admin.call("", "describe", "apichain.resource.v1.ResourceService.Watch")
		require.Equal(t, 0, exit, out)
		assert.Contains(t, out, "rpc Watch ( .apichain.resource.v1.WatchRequest ) returns ( stream .apichain.resource.v1.WatchResponse )")
		// Any signed-in user may read the schema, as /openapi/v3; an anonymous caller may not.
		out, exit = bob.call("", "list")
		assert.Equal(t, 0, exit, out)
		out, exit = grpcurl{t: t, bin: bin, addr: addr, flags: ca}.call("", "list")
		assert.NotEqual(t, 0, exit, out)
		assert.Contains(t, out, `code = PermissionDenied desc = forbidden: User "system:anonymous" cannot get path "/openapi/grpc"`)
	})

	t.Run("CRUD", func(t *testing.T) {
		created := admin.ok(`{`+cmRef+`},"body":{"contentType":"application/json","data":"`+b64(`{"metadata":{"name":"via-grpcurl"},"data":{"a":"1"}}`)+`"}}`,
			resourceService+"Create")
		assert.EqualValues(t, 201, created["code"])
		cm := object(t, created, "body")
		meta := cm["metadata"].(map[string]any)
		assert.Equal(t, "via-grpcurl", meta["name"])
		assert.Equal(t, "grpcurl", meta["managedFields"].([]any)[0].(map[string]any)["manager"], "grpcurl's user agent manages it")

		got := object(t, admin.ok(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"}}`, resourceService+"Get"), "body")
		assert.Equal(t, meta["uid"], got["metadata"].(map[string]any)["uid"])
		// Asked as YAML, answered as YAML.
		yamlGet := admin.ok(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"},"encoding":{"accept":"application/yaml"}}`,
			resourceService+"Get")
		assert.Equal(t, "application/yaml", yamlGet["body"].(map[string]any)["contentType"])

		patched := object(t, admin.ok(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"},`+
			`"body":{"contentType":"application/merge-patch+json","data":"`+b64(`{"data":{"b":"2"}}`)+`"}}`, resourceService+"Patch"), "body")
		assert.Equal(t, map[string]any{"a": "1", "b": "2"}, patched["data"])

		updated := object(t, admin.ok(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"},`+
			`"body":{"contentType":"application/json","data":"`+b64(`{"metadata":{"name":"via-grpcurl"},"data":{"c":"3"}}`)+`"}}`, resourceService+"Update"), "body")
		assert.Equal(t, map[string]any{"c": "3"}, updated["data"])

		admin.ok(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"}}`, resourceService+"Delete")
		st := admin.fails(5, `{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"via-grpcurl"}}`, resourceService+"Get")
		assert.Equal(t, `configmaps "via-grpcurl" not found`, st["message"])
		assert.EqualValues(t, 404, st["code"])
	})

	t.Run("list pages", func(t *testing.T) {
		for i := range 5 {
			admin.ok(`{`+cmRef+`},"body":{"contentType":"application/json","data":"`+
				b64(fmt.Sprintf(`{"metadata":{"name":"paged-%d","labels":{"grpcurl":"paged"}}}`, i))+`"}}`, resourceService+"Create")
		}
		var names []string
		token := ""
		for pages := 1; ; pages++ {
			require.LessOrEqual(t, pages, 3)
			page := admin.ok(`{`+cmRef+`},"options":{"labelSelector":"grpcurl=paged"},"pageSize":2,"pageToken":"`+token+`"}`, resourceService+"List")
			for _, item := range object(t, page, "body")["items"].([]any) {
				names = append(names, item.(map[string]any)["metadata"].(map[string]any)["name"].(string))
			}
			next, _ := page["nextPageToken"].(string)
			if next == "" {
				break
			}
			token = next
		}
		assert.Equal(t, []string{"paged-0", "paged-1", "paged-2", "paged-3", "paged-4"}, names)
		// The same list in pieces (StreamList): put together, the list's body.
		out, exit := admin.call(`{"list":{`+cmRef+`},"options":{"labelSelector":"grpcurl=paged"}}}`, resourceService+"StreamList")
		require.Equal(t, 0, exit, out)
		var data []byte
		dec := json.NewDecoder(strings.NewReader(out))
		for pieces := 0; dec.More(); pieces++ {
			var piece struct {
				Body struct {
					ContentType string
					Data        []byte
				}
			}
			require.NoError(t, dec.Decode(&piece), out)
			if pieces == 0 {
				assert.Equal(t, "application/json", piece.Body.ContentType)
			}
			data = append(data, piece.Body.Data...)
		}
		var list corev1.ConfigMapList
		require.NoError(t, json.Unmarshal(data, &list), string(data))
		names = nil
		for _, item := range list.Items {
			names = append(names, item.Name)
		}
		assert.Equal(t, []string{"paged-0", "paged-1", "paged-2", "paged-3", "paged-4"}, names)
		// A label selector that does not parse is kube's 400.
		st := admin.fails(3, `{`+cmRef+`},"options":{"labelSelector":"a in (b"}}`, resourceService+"List")
		assert.EqualValues(t, 400, st["code"])
	})

	t.Run("server-side apply", func(t *testing.T) {
		apply := func(manager string, value string, force bool) (string, int) {
			return admin.call(fmt.Sprintf(`{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"applied"},`+
				`"body":{"contentType":"application/apply-patch+yaml","data":"%s"},"options":{"fieldManager":"%s"},"force":%t}`,
				b64("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {key: \""+value+"\"}\n"), manager, force), resourceService+"Patch")
		}
		out, exit := apply("first", "1", false)
		require.Equal(t, 0, exit, out)
		out, exit = apply("second", "2", false)
		assert.Equal(t, 64+10, exit, "ABORTED, kube's 409: %s", out)
		assert.Contains(t, out, `conflict with \"first\"`)
		out, exit = apply("second", "2", true)
		require.Equal(t, 0, exit, out)
	})

	t.Run("watch with an event and a bookmark", func(t *testing.T) {
		cmd := exec.Command(bin, append(append([]string{}, admin.flags...), "-d",
			`{`+cmRef+`,"name":""},"options":{"labelSelector":"grpcurl=watched","resourceVersionMatch":"NotOlderThan"},"sendInitialEvents":true,"allowWatchBookmarks":true}`,
			addr, resourceService+"Watch")...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		events := make(chan map[string]any)
		go func() {
			defer close(events)
			dec := json.NewDecoder(bufio.NewReader(stdout))
			for {
				var ev map[string]any
				if err := dec.Decode(&ev); err != nil {
					return
				}
				events <- ev
			}
		}()
		next := func() map[string]any {
			select {
			case ev, ok := <-events:
				require.True(t, ok, "the watch ended")
				return ev
			case <-time.After(20 * time.Second):
				t.Fatal("no event within 20 s")
				return nil
			}
		}
		first := next()
		assert.Empty(t, first["type"], "the first message says the watch is open: %v", first)
		bookmark := next()
		require.Equal(t, "BOOKMARK", bookmark["type"], "%v", bookmark)
		assert.Equal(t, "true", object(t, bookmark, "object")["metadata"].(map[string]any)["annotations"].(map[string]any)["k8s.io/initial-events-end"])
		admin.ok(`{`+cmRef+`},"body":{"contentType":"application/json","data":"`+b64(`{"metadata":{"name":"watched","labels":{"grpcurl":"watched"}}}`)+`"}}`,
			resourceService+"Create")
		added := next()
		assert.Equal(t, "ADDED", added["type"])
		assert.Equal(t, "watched", object(t, added, "object")["metadata"].(map[string]any)["name"])
	})

	t.Run("discovery, lifecycle and health", func(t *testing.T) {
		doc := admin.ok(`{"path":"/apis/apps/v1"}`, "apichain.discovery.v1.DiscoveryService/GetDocument")
		data, err := base64.StdEncoding.DecodeString(doc["data"].(string))
		require.NoError(t, err)
		assert.Contains(t, string(data), `"kind":"APIResourceList"`)
		assert.Contains(t, string(data), `"name":"deployments"`)
		states := admin.ok(``, "apichain.lifecycle.v1.LifecycleService/ListInstanceStates")
		assert.Len(t, states["states"], 4)
		// Health is readiness, which kube shows anyone.
		health := anonymous.ok(`{"service":"gateway"}`, "grpc.health.v1.Health/Check")
		assert.Equal(t, "SERVING", health["status"])
	})

	t.Run("errors are kube Status details", func(t *testing.T) {
		bad := grpcurl{t: t, bin: bin, addr: addr, flags: append(append([]string{}, withProtoset...), "-H", "authorization: Bearer not-a-token")}
		st := bad.fails(16, `{"ref":{"version":"v1","resource":"namespaces","name":"default"}}`, resourceService+"Get")
		assert.Equal(t, "Unauthorized", st["reason"])
		st = anonymous.fails(7, `{"ref":{"version":"v1","resource":"namespaces","name":"default"}}`, resourceService+"Get")
		assert.Equal(t, `namespaces "default" is forbidden: User "system:anonymous" cannot get resource "namespaces" in API group "" at the cluster scope`, st["message"])
		st = admin.fails(3, `{`+cmRef+`},"body":{"contentType":"application/json","data":"`+b64(`{"metadata":{"name":"x"},"data":`)+`"}}`, resourceService+"Create")
		assert.EqualValues(t, 400, st["code"])
		st = admin.fails(5, `{"ref":{"group":"no.such.group","version":"v1","resource":"things"}}`, resourceService+"List")
		assert.EqualValues(t, 404, st["code"])
		out, exit := admin.call(`{"ref": 1}`, resourceService+"Get")
		assert.NotEqual(t, 0, exit, "a request grpcurl cannot encode: %s", out)
	})

	t.Run("RBAC per resource: denied, then allowed by a binding", func(t *testing.T) {
		get := `{"ref":{"version":"v1","resource":"configmaps","namespace":"default","name":"applied"}}`
		st := bob.fails(7, get, resourceService+"Get")
		assert.Equal(t, `configmaps "applied" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default"`, st["message"])
		admin.ok(`{"ref":{"group":"rbac.authorization.k8s.io","version":"v1","resource":"roles","namespace":"default"},"body":{"contentType":"application/json","data":"`+
			b64(`{"metadata":{"name":"grpcurl-reader"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`)+`"}}`, resourceService+"Create")
		admin.ok(`{"ref":{"group":"rbac.authorization.k8s.io","version":"v1","resource":"rolebindings","namespace":"default"},"body":{"contentType":"application/json","data":"`+
			b64(`{"metadata":{"name":"bob-grpcurl"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"grpcurl-reader"},`+
				`"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"bob"}]}`)+`"}}`, resourceService+"Create")
		require.Eventually(t, func() bool {
			_, exit := bob.call(get, resourceService+"Get")
			return exit == 0
		}, 10*time.Second, 50*time.Millisecond, "the binding takes effect")
		st = bob.fails(7, `{`+cmRef+`}}`, resourceService+"List")
		assert.Contains(t, st["message"], `cannot list resource "configmaps"`, "only get was granted")
	})
}
