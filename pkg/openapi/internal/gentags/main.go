// Command gentags writes ../../zz_generated.tags.go: the OpenAPI facts about
// the k8s.io/api and k8s.io/apimachinery meta/v1 types that live only in
// their source comments and so cannot be found by reflection at run time.
// kube's openapi-gen reads the same comment tags:
//
//   - +optional on a field without omitempty, and +required on a field with
//     omitempty (otherwise "required" follows from the omitempty json option);
//   - +listType, +listMapKey, +mapType and +structType on fields, and
//     +structType / +mapType on struct types (x-kubernetes-list-type,
//     x-kubernetes-list-map-keys, x-kubernetes-map-type);
//   - +enum on string types, whose values are the typed string constants of
//     the same package;
//   - +default on fields (the field's "default": a JSON value, or ref(Const) for
//     a string constant of the same package).
//
// Run it from the pkg module with `go generate ./openapi` after changing the
// k8s.io/api or k8s.io/apimachinery version in go.mod.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

type fieldFacts struct {
	required    int // 0: from omitempty, 1: required, -1: optional
	listType    string
	listMapKeys []string
	mapType     string
	def         string // the +default marker's value, as written
	pkg         string // the field's package, where ref(...) names a constant
}

type facts struct {
	fields     map[string]*fieldFacts
	typeMap    map[string]string   // struct type key -> x-kubernetes-map-type
	enumTypes  map[string]bool     // enum type key
	enumValues map[string][]string // enum type key -> values
	consts     map[string]string   // "<package>.<Name>" -> string constant value
}

func main() {
	out := flag.String("o", "zz_generated.tags.go", "output file")
	flag.Parse()

	f := &facts{
		fields:     map[string]*fieldFacts{},
		typeMap:    map[string]string{},
		enumTypes:  map[string]bool{},
		enumValues: map[string][]string{},
		consts:     map[string]string{},
	}
	var versions []string
	for _, m := range []struct{ module, sub string }{
		{"k8s.io/api", ""},
		{"k8s.io/apimachinery", "pkg/apis/meta/v1"},
		{"github.com/apichain/apichain/pkg", "apiregistration"}, // apichain's own wire types
	} {
		dir, version := moduleDir(m.module)
		if version != "" {
			versions = append(versions, m.module+" "+version)
		}
		root := filepath.Join(dir, m.sub)
		err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if info.IsDir() {
				if info.Name() == "testdata" || (p != root && m.sub != "") {
					return filepath.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(dir, filepath.Dir(p))
			if err != nil {
				return err
			}
			importPath := m.module
			if rel != "." {
				importPath += "/" + filepath.ToSlash(rel)
			}
			return f.scanFile(p, importPath)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	src := f.render(versions)
	formatted, err := format.Source(src)
	if err != nil {
		log.Fatalf("format: %v\n%s", err, src)
	}
	if err := os.WriteFile(*out, formatted, 0o644); err != nil {
		log.Fatal(err)
	}
}

func moduleDir(module string) (dir, version string) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", module)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("go list -m %s: %v", module, err)
	}
	parts := strings.Fields(string(b))
	if len(parts) == 1 { // this repository's own module has no version
		parts = append(parts, "")
	}
	if len(parts) != 2 || parts[0] == "" {
		log.Fatalf("go list -m %s: no module directory (run `go mod download %s`)", module, module)
	}
	return parts[0], parts[1]
}

func (f *facts) scanFile(path, importPath string) error {
	name := filepath.Base(path)
	if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
		strings.HasPrefix(name, "zz_generated") || strings.HasSuffix(name, ".pb.go") {
		return nil
	}
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	type constSpec struct {
		typ, name, value string
	}
	var consts []constSpec
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		switch gd.Tok {
		case token.TYPE:
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				key := importPath + "." + ts.Name.Name
				tags := commentTags(doc)
				switch t := ts.Type.(type) {
				case *ast.StructType:
					if v := first(tags["structType"]); v != "" {
						f.typeMap[key] = v
					}
					f.scanStruct(key, t)
				case *ast.Ident:
					if t.Name == "string" && tags["enum"] != nil {
						f.enumTypes[key] = true
					}
				}
			}
		case token.CONST:
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING || i >= len(vs.Names) {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return err
					}
					consts = append(consts, constSpec{typ: importPath + "." + typ.Name, name: importPath + "." + vs.Names[i].Name, value: s})
				}
			}
		}
	}
	// Constants are matched to enum types after the whole walk (a constant can
	// come before its type in file order, or sit in another file).
	for _, c := range consts {
		f.enumValues[c.typ] = append(f.enumValues[c.typ], c.value)
		f.consts[c.name] = c.value
	}
	return nil
}

func (f *facts) scanStruct(typeKey string, st *ast.StructType) {
	for _, field := range st.Fields.List {
		if len(field.Names) == 0 || field.Tag == nil {
			continue // embedded (inlined) or untagged
		}
		tag, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			continue
		}
		jsonTag, ok := reflect.StructTag(tag).Lookup("json")
		if !ok {
			continue
		}
		name, opts, _ := strings.Cut(jsonTag, ",")
		if name == "" || name == "-" {
			continue
		}
		omitempty := hasOpt(opts, "omitempty")
		tags := commentTags(field.Doc)
		ff := &fieldFacts{}
		_, optional := tags["optional"]
		_, required := tags["required"]
		switch {
		case optional && required:
		case optional && !omitempty:
			ff.required = -1
		case required && omitempty:
			ff.required = 1
		}
		ff.listType = first(tags["listType"])
		ff.listMapKeys = tags["listMapKey"]
		ff.mapType = first(tags["mapType"])
		if ff.mapType == "" {
			ff.mapType = first(tags["structType"])
		}
		ff.def = first(tags["default"])
		ff.pkg = typeKey[:strings.LastIndex(typeKey, ".")]
		if ff.required != 0 || ff.listType != "" || len(ff.listMapKeys) > 0 || ff.mapType != "" || ff.def != "" {
			f.fields[typeKey+"."+name] = ff
		}
	}
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// commentTags reads "+key=value" and "+key" lines the way gengo's
// ExtractCommentTags does: only lines that start with "+", the key up to the
// first "=", every occurrence kept.
func commentTags(doc *ast.CommentGroup) map[string][]string {
	out := map[string][]string{}
	if doc == nil {
		return out
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "+") {
			continue
		}
		kv := strings.TrimPrefix(line, "+")
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, " \t") {
			continue
		}
		out[k] = append(out[k], v)
	}
	return out
}

func (f *facts) render(versions []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gentags from the comment tags of %s. DO NOT EDIT.\n\npackage openapi\n\n", strings.Join(versions, " and "))

	b.WriteString("// generatedFieldTags holds, by \"<package>.<Type>.<json name>\", what a field's\n// comments say that its Go type and json tag do not.\n")
	b.WriteString("var generatedFieldTags = map[string]fieldTags{\n")
	for _, k := range sortedKeys(f.fields) {
		ff := f.fields[k]
		var parts []string
		switch ff.required {
		case 1:
			parts = append(parts, "required: requiredField")
		case -1:
			parts = append(parts, "required: optionalField")
		}
		if ff.listType != "" {
			parts = append(parts, fmt.Sprintf("listType: %q", ff.listType))
		}
		if len(ff.listMapKeys) > 0 {
			parts = append(parts, fmt.Sprintf("listMapKeys: %#v", ff.listMapKeys))
		}
		if ff.mapType != "" {
			parts = append(parts, fmt.Sprintf("mapType: %q", ff.mapType))
		}
		if ff.def != "" {
			parts = append(parts, fmt.Sprintf("defaultJSON: %q", f.defaultJSON(ff)))
		}
		fmt.Fprintf(&b, "%q: {%s},\n", k, strings.Join(parts, ", "))
	}
	b.WriteString("}\n\n")

	b.WriteString("// generatedStructMapTypes holds x-kubernetes-map-type of struct types, by \"<package>.<Type>\".\n")
	b.WriteString("var generatedStructMapTypes = map[string]string{\n")
	for _, k := range sortedKeys(f.typeMap) {
		fmt.Fprintf(&b, "%q: %q,\n", k, f.typeMap[k])
	}
	b.WriteString("}\n\n")

	b.WriteString("// generatedEnums holds the sorted values of +enum string types, by \"<package>.<Type>\".\n")
	b.WriteString("var generatedEnums = map[string][]string{\n")
	for _, k := range sortedKeys(f.enumTypes) {
		seen := map[string]bool{}
		var vals []string
		for _, v := range f.enumValues[k] {
			if !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		sort.Strings(vals)
		fmt.Fprintf(&b, "%q: %s,\n", k, strings.TrimPrefix(fmt.Sprintf("%#v", vals), "[]string"))
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// defaultJSON is a +default marker as JSON: ref(Name) is the named string constant.
func (f *facts) defaultJSON(ff *fieldFacts) string {
	if name, ok := strings.CutPrefix(ff.def, "ref("); ok {
		v, found := f.consts[ff.pkg+"."+strings.TrimSuffix(name, ")")]
		if !found {
			log.Fatalf("+default=%s: no string constant %s in %s", ff.def, name, ff.pkg)
		}
		return strconv.Quote(v)
	}
	var probe any
	if err := json.Unmarshal([]byte(ff.def), &probe); err != nil {
		log.Fatalf("+default=%s is not JSON: %v", ff.def, err)
	}
	return ff.def
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
