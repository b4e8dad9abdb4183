// Package layout checks apichain's import rules, which keep the split honest: no service
// imports another (what two share lives in pkg/ or proto/), pkg/ imports no service and no
// command, the gateway, which holds no data, links no etcd package, and each kind has one
// owner that stores it.
package layout

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/apichain/apichain/"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
	Deps                               []string
}

// list runs go list -json in the workspace.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v", args)
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// area is what a package belongs to: "pkg", "cmd", "gen", "test" or "services/<name>".
func area(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, module)
	if !ok {
		return ""
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "services" && len(parts) > 1 {
		return "services/" + parts[1]
	}
	return parts[0]
}

// violation says why from may not import to, or "".
func violation(from, to string) string {
	a, b := area(from), area(to)
	switch {
	case b == "" || a == b:
		return ""
	case strings.HasPrefix(a, "services/") && strings.HasPrefix(b, "services/"):
		return "a service imports another service"
	case (a == "pkg" || a == "gen") && (strings.HasPrefix(b, "services/") || b == "cmd" || b == "test"):
		return a + "/ imports " + b
	case strings.HasPrefix(a, "services/") && (b == "cmd" || b == "test"):
		return "a service imports " + b
	}
	return ""
}

func TestViolationRules(t *testing.T) {
	assert.NotEmpty(t, violation(module+"services/gateway/app", module+"services/core/builtin"))
	assert.NotEmpty(t, violation(module+"pkg/registry", module+"services/core/app"))
	assert.NotEmpty(t, violation(module+"pkg/process", module+"cmd/apichain"))
	assert.Empty(t, violation(module+"services/gateway/app", module+"services/gateway/proxy"))
	assert.Empty(t, violation(module+"services/core/app", module+"pkg/registry"))
	assert.Empty(t, violation(module+"cmd/apichain", module+"services/core/app"))
	assert.Empty(t, violation(module+"pkg/registry", "k8s.io/api/core/v1"))
}

func TestImportRules(t *testing.T) {
	pkgs := list(t, "./gen/...", "./pkg/...", "./services/gateway/...", "./services/core/...",
		"./services/extensions/...", "./services/aggregator/...")
	require.Greater(t, len(pkgs), 30, "go list found the packages")
	for _, p := range pkgs {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if why := violation(p.ImportPath, imp); why != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
	}
}

// The gateway never talks to etcd: no package of the gateway's imports etcd, except kube's
// storage feature checks, which kube's flow-control library (priority and fairness) brings
// along for its work estimator's types and never dials.
func TestGatewayLinksNoEtcd(t *testing.T) {
	pkgs := list(t, "-deps", "./services/gateway")
	var deps []string
	for _, p := range pkgs {
		deps = append(deps, p.ImportPath)
	}
	require.Contains(t, deps, "google.golang.org/grpc", "the dependency list is the gateway's")
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, "go.etcd.io/") || p.ImportPath == "k8s.io/apiserver/pkg/storage/feature" {
			continue
		}
		for _, imp := range p.Imports {
			assert.False(t, strings.HasPrefix(imp, "go.etcd.io/"), "%s (in the gateway) imports %s", p.ImportPath, imp)
		}
	}
}

// The server machinery is apichain's own: no binary links kube's generic server, handlers,
// registry or storage, the kube-aggregator, k8s.io/kubernetes or the apiextensions server.
// kube's leaf libraries are fine, with what they bring: the audit types and policy bring the
// request-context helpers of pkg/endpoints/request, the CRD validation brings
// pkg/server/egressselector (a dialer, for webhook URLs) and apiextensions' schema packages,
// the admission webhook packages bring pkg/endpoints/openapi (the OpenAPI definition
// namer of kube's CEL type resolver), and the flow-control library (priority and fairness)
// brings the helpers it uses: the debug endpoints' mux, httplog, routine, the endpoint
// metrics and response writer, and storage's Stats type with two of its small packages.
// kube's storage value transformers are the ciphers of encryption at rest.
// apiextensions' conversion package is the one leaf of its server apichain links: kube's
// custom resource converter (the ConversionReview exchange with a CRD's webhook and its
// checks of the answer), which the extensions service calls on its own read and write paths.
func TestNoKubeServerMachinery(t *testing.T) {
	forbidden := []string{"k8s.io/apiserver/pkg/server", "k8s.io/apiserver/pkg/registry", "k8s.io/apiserver/pkg/storage",
		"k8s.io/apiserver/pkg/endpoints", "k8s.io/kube-aggregator/", "k8s.io/kubernetes/",
		"k8s.io/apiextensions-apiserver/pkg/apiserver", "k8s.io/apiextensions-apiserver/pkg/registry",
		"k8s.io/apiextensions-apiserver/pkg/controller"}
	allowed := []string{"k8s.io/apiserver/pkg/endpoints/request", "k8s.io/apiserver/pkg/server/egressselector", "k8s.io/apiserver/pkg/endpoints/openapi",
		// apiextensions' schema packages: structural schema, pruning, defaulting, validation, CEL.
		"k8s.io/apiextensions-apiserver/pkg/apiserver/schema", "k8s.io/apiextensions-apiserver/pkg/apiserver/validation",
		// kube's value transformers (encryption at rest: identity, aescbc, aesgcm, secretbox, KMS v2's
		// envelope); pkg/storage/encryption chooses and reloads them, the storage layer is apichain's.
		"k8s.io/apiserver/pkg/storage/value"}
	allowedExactly := []string{"k8s.io/apiserver/pkg/server/mux", "k8s.io/apiserver/pkg/server/httplog", "k8s.io/apiserver/pkg/server/routine",
		"k8s.io/apiserver/pkg/endpoints/metrics", "k8s.io/apiserver/pkg/endpoints/responsewriter",
		"k8s.io/apiserver/pkg/storage", "k8s.io/apiserver/pkg/storage/feature", "k8s.io/apiserver/pkg/storage/cacher/delegator",
		"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"}
	pkgs := list(t, "-deps", "./cmd/apichain", "./services/gateway", "./services/core", "./services/extensions", "./services/aggregator")
	require.Greater(t, len(pkgs), 100)
	for _, p := range pkgs {
		if slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(p.ImportPath, a) }) || slices.Contains(allowedExactly, p.ImportPath) {
			continue
		}
		for _, f := range forbidden {
			assert.False(t, strings.HasPrefix(p.ImportPath, f), "a binary links %s", p.ImportPath)
		}
	}
}

// One owner per kind: a service stores only the kinds it serves. Its storage is the
// backend's (backend.Backend.Store), which refuses the keys of any kind the service's
// ResourceService does not serve (pkg/backend's TestStorageOwnsOnlyWhatTheBackendServes), so
// no service may open etcd, a store or a registry handler of its own: each installs one
// registry, the one it serves (backend.InstallRegistry), and reads the kinds of others
// through their gRPC API (pkg/registry/remote).
func TestOneOwnerPerKind(t *testing.T) {
	forbidden := map[string][]string{
		module + "pkg/storage":      {"NewStore", "NewClient"},
		module + "pkg/registry":     {"NewHandler"},
		"go.etcd.io/etcd/client/v3": {"New", "NewFromURL", "NewFromURLs"},
	}
	registries := map[string]int{} // service -> InstallRegistry calls
	files := 0
	err := filepath.WalkDir(filepath.Join(repoRoot(), "services"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := map[string]string{} // local name -> import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if p == "go.etcd.io/etcd/client/v3" {
				name = "clientv3"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		rel, _ := filepath.Rel(repoRoot(), path)
		service := strings.Join(strings.Split(rel, string(filepath.Separator))[:2], "/")
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "InstallRegistry" {
				registries[service]++
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if slices.Contains(forbidden[names[x.Name]], sel.Sel.Name) {
				t.Errorf("%s calls %s.%s: a service's storage and registry are its backend's (backend.InstallRegistry)", rel, names[x.Name], sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 50, "the services' sources were read")
	for _, svc := range []string{"services/core", "services/extensions", "services/aggregator"} {
		assert.Equal(t, 1, registries[svc], "%s installs one registry, the one it serves", svc)
	}
	assert.Zero(t, registries["services/gateway"], "the gateway stores nothing")
}
