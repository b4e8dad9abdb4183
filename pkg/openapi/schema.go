package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// requiredness overrides, for one field, what its omitempty json option says
// about it being required (kube's openapi-gen: +required / +optional comment
// tags win over omitempty).
type requiredness int8

const (
	inferRequired requiredness = iota
	requiredField
	optionalField
)

// fieldTags is what a field's comment tags say (see zz_generated.tags.go).
type fieldTags struct {
	required    requiredness
	listType    string
	listMapKeys []string
	mapType     string
	defaultJSON string // a +default marker's value
}

const (
	extGVK            = "x-kubernetes-group-version-kind"
	extAction         = "x-kubernetes-action"
	extPatchStrategy  = "x-kubernetes-patch-strategy"
	extPatchMergeKey  = "x-kubernetes-patch-merge-key"
	extListType       = "x-kubernetes-list-type"
	extListMapKeys    = "x-kubernetes-list-map-keys"
	extMapType        = "x-kubernetes-map-type"
	v3SchemaRefPrefix = "#/components/schemas/"
	v2SchemaRefPrefix = "#/definitions/"
)

var (
	timeType        = reflect.TypeOf(time.Time{})
	durationType    = reflect.TypeOf(metav1.Duration{})
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// customSchemaType is implemented by the apimachinery types whose JSON form
// is not their Go structure (metav1.Time, resource.Quantity,
// intstr.IntOrString, ...); kube's openapi-gen uses the same methods.
type customSchemaType interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

// customV3OneOf is implemented by the types that publish a oneOf of types in
// OpenAPI v3 instead of their v2 type.
type customV3OneOf interface {
	OpenAPIV3OneOfTypes() []string
}

type modelNamer interface {
	OpenAPIModelName() string
}

type swaggerDocer interface {
	SwaggerDoc() map[string]string
}

// typeDescriptions describes the apimachinery types that have no SwaggerDoc
// method.
var typeDescriptions = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}): "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON. " +
		"It is serialized as an RFC 3339 date and time in UTC, with second precision.",
	reflect.TypeOf(metav1.MicroTime{}): "MicroTime is version of Time with microsecond level precision.",
	durationType:                       "Duration is a wrapper around time.Duration, serialized as a Go duration string such as \"1h2m3s\".",
	reflect.TypeOf(resource.Quantity{}): "Quantity is a fixed-point representation of a number, serialized as a string such as " +
		"\"1\", \"500m\", \"1.5Gi\" or \"2e3\": a signed decimal number followed by an optional suffix, which is a binary SI " +
		"suffix (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (n, u, m, \"\", k, M, G, T, P, E) or a decimal exponent (e3, E6).",
	reflect.TypeOf(intstr.IntOrString{}): "IntOrString is a type that can hold an int32 or a string. " +
		"When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type. " +
		"This allows you to have, for example, a JSON field that can accept a name or number.",
	reflect.TypeOf(runtime.RawExtension{}): "RawExtension is used to hold extensions in external versions: " +
		"an embedded object, serialized as the JSON of that object.",
	reflect.TypeOf(metav1.WatchEvent{}): "Event represents a single event to a watched resource.",
}

// watchEventFieldDocs describes metav1.WatchEvent's fields (it has no SwaggerDoc).
var watchEventFieldDocs = map[string]string{
	"type": "Type of the event: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.",
	"object": "Object is:\n * If Type is Added or Modified: the new state of the object.\n" +
		" * If Type is Deleted: the state of the object immediately before deletion.\n" +
		" * If Type is Error: *Status is recommended; other types may make sense\n   depending on context.",
}

// schemaBuilder turns Go types into OpenAPI definitions, one builder per
// document.
type schemaBuilder struct {
	v3    bool
	defs  map[string]*spec.Schema
	names map[reflect.Type]string
	types map[string]reflect.Type
	gvks  map[reflect.Type][]schema.GroupVersionKind
}

func newSchemaBuilder(v3 bool) *schemaBuilder {
	return &schemaBuilder{
		v3:    v3,
		defs:  map[string]*spec.Schema{},
		names: map[reflect.Type]string{},
		types: map[string]reflect.Type{},
		gvks:  map[reflect.Type][]schema.GroupVersionKind{},
	}
}

func (b *schemaBuilder) ref(name string) spec.Ref {
	if b.v3 {
		return spec.MustCreateRef(v3SchemaRefPrefix + name)
	}
	return spec.MustCreateRef(v2SchemaRefPrefix + name)
}

// refTo returns a schema that is a bare $ref to t's definition.
func (b *schemaBuilder) refTo(t reflect.Type) (spec.Schema, error) {
	name, err := b.define(derefType(t))
	if err != nil {
		return spec.Schema{}, err
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: b.ref(name)}}, nil
}

// addGVK marks t's definition as the schema of gvk.
func (b *schemaBuilder) addGVK(t reflect.Type, gvk schema.GroupVersionKind) {
	t = derefType(t)
	for _, have := range b.gvks[t] {
		if have == gvk {
			return
		}
	}
	b.gvks[t] = append(b.gvks[t], gvk)
}

// definitions returns every definition built so far, with the
// x-kubernetes-group-version-kind extensions and (v3) the allOf wrapping.
func (b *schemaBuilder) definitions() map[string]*spec.Schema {
	for t, gvks := range b.gvks {
		name, ok := b.names[t]
		if !ok {
			continue
		}
		sort.Slice(gvks, func(i, j int) bool {
			a, c := gvks[i], gvks[j]
			if a.Group != c.Group {
				return a.Group < c.Group
			}
			if a.Version != c.Version {
				return a.Version < c.Version
			}
			return a.Kind < c.Kind
		})
		list := make([]interface{}, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, gvkExtension(gvk))
		}
		setExtension(b.defs[name], extGVK, list)
	}
	if b.v3 {
		for _, s := range b.defs {
			wrapRefs(s)
		}
	}
	return b.defs
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]interface{} {
	return map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

func setExtension(s *spec.Schema, key string, value interface{}) {
	if s.Extensions == nil {
		s.Extensions = spec.Extensions{}
	}
	s.Extensions[key] = value
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// typeKey is how zz_generated.tags.go names a Go type.
func typeKey(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}

// definitionName is the name kube gives t's definition: its
// OpenAPIModelName, else its package path with the domain reversed
// (k8s.io/api/core/v1.ConfigMap -> io.k8s.api.core.v1.ConfigMap).
func definitionName(t reflect.Type) string {
	if n, ok := reflect.New(t).Interface().(modelNamer); ok {
		if name := n.OpenAPIModelName(); name != "" {
			return name
		}
	}
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/vendor/"); i >= 0 {
		pkg = pkg[i+len("/vendor/"):]
	}
	parts := strings.Split(pkg, "/")
	if strings.Contains(parts[0], ".") {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Join(append(parts, t.Name()), ".")
}

func swaggerDoc(t reflect.Type) map[string]string {
	if t == reflect.TypeOf(metav1.WatchEvent{}) {
		return watchEventFieldDocs
	}
	if d, ok := reflect.New(t).Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	return nil
}

func typeDescription(t reflect.Type) string {
	if d := swaggerDoc(t)[""]; d != "" {
		return d
	}
	return typeDescriptions[t]
}

// define returns the definition name of the named struct type t, building
// its definition (and those of the types it refers to) on first use.
func (b *schemaBuilder) define(t reflect.Type) (string, error) {
	if name, ok := b.names[t]; ok {
		return name, nil
	}
	if t.Kind() != reflect.Struct || t.Name() == "" {
		return "", fmt.Errorf("openapi: %v is not a named struct type", t)
	}
	name := definitionName(t)
	if other, ok := b.types[name]; ok && other != t {
		return "", fmt.Errorf("openapi: types %v and %v both map to definition %s", other, t, name)
	}
	s := &spec.Schema{}
	b.names[t] = name
	b.types[name] = t
	b.defs[name] = s
	s.Description = typeDescription(t)

	zero := reflect.New(t).Interface()
	if custom, ok := zero.(customSchemaType); ok {
		if oneOf, ok := zero.(customV3OneOf); ok && b.v3 {
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				s.OneOf = append(s.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}}})
			}
		} else {
			s.Type = custom.OpenAPISchemaType()
		}
		s.Format = custom.OpenAPISchemaFormat()
		return name, nil
	}
	if t == durationType {
		s.Type = []string{"string"}
		return name, nil
	}

	s.Type = []string{"object"}
	props := map[string]spec.Schema{}
	var required []string
	if err := b.addFields(t, props, &required); err != nil {
		return "", err
	}
	if len(props) > 0 {
		s.Properties = props
	}
	s.Required = required
	if mt := generatedStructMapTypes[typeKey(t)]; mt != "" {
		setExtension(s, extMapType, mt)
	}
	return name, nil
}

// addFields adds the JSON fields of struct type t to props, inlining
// embedded structs the way encoding/json does.
func (b *schemaBuilder) addFields(t reflect.Type, props map[string]spec.Schema, required *[]string) error {
	docs := swaggerDoc(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if ft := derefType(f.Type); ft.Kind() == reflect.Struct {
				if err := b.addFields(ft, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			continue
		}
		// omitzero (Go 1.24) drops the field just as omitempty does.
		omitempty := hasTag && (hasOption(opts, "omitempty") || hasOption(opts, "omitzero"))
		tags := generatedFieldTags[typeKey(t)+"."+name]

		var prop spec.Schema
		if hasOption(opts, "string") {
			prop = simpleSchema("string", "")
		} else {
			var err error
			if prop, err = b.schemaOf(f.Type); err != nil {
				return fmt.Errorf("%v.%s: %w", t, f.Name, err)
			}
			addEnum(&prop, f.Type)
			if b.v3 {
				if def, ok := enforcedDefault(f.Type, omitempty); ok {
					prop.Default = def
				}
			}
		}
		if tags.defaultJSON != "" {
			var def any
			if err := json.Unmarshal([]byte(tags.defaultJSON), &def); err != nil {
				return fmt.Errorf("%v.%s: default %s: %w", t, f.Name, tags.defaultJSON, err)
			}
			prop.Default = def
		}
		prop.Description = docs[name]
		if v := f.Tag.Get("patchStrategy"); v != "" {
			setExtension(&prop, extPatchStrategy, v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			setExtension(&prop, extPatchMergeKey, v)
		}
		if tags.listType != "" {
			setExtension(&prop, extListType, tags.listType)
		}
		if len(tags.listMapKeys) > 0 {
			keys := make([]interface{}, len(tags.listMapKeys))
			for i, k := range tags.listMapKeys {
				keys[i] = k
			}
			setExtension(&prop, extListMapKeys, keys)
		}
		if tags.mapType != "" {
			setExtension(&prop, extMapType, tags.mapType)
		}
		props[name] = prop

		isRequired := !omitempty
		switch tags.required {
		case requiredField:
			isRequired = true
		case optionalField:
			isRequired = false
		}
		if isRequired {
			*required = append(*required, name)
		}
	}
	return nil
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func simpleSchema(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
}

// schemaOf returns the schema of a value of type t where it appears in
// another schema: a $ref for named structs, the schema itself otherwise.
func (b *schemaBuilder) schemaOf(t reflect.Type) (spec.Schema, error) {
	t = derefType(t)
	if t == timeType {
		return simpleSchema("string", "date-time"), nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.Name() != "" {
			return b.refTo(t)
		}
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
		props := map[string]spec.Schema{}
		var required []string
		if err := b.addFields(t, props, &required); err != nil {
			return spec.Schema{}, err
		}
		if len(props) > 0 {
			s.Properties = props
		}
		s.Required = required
		return s, nil
	case reflect.String:
		return simpleSchema("string", ""), nil
	case reflect.Bool:
		return simpleSchema("boolean", ""), nil
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint16:
		return simpleSchema("integer", "int32"), nil
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return simpleSchema("integer", "int64"), nil
	case reflect.Int8, reflect.Uint8:
		return simpleSchema("integer", "byte"), nil
	case reflect.Float32:
		return simpleSchema("number", "float"), nil
	case reflect.Float64:
		return simpleSchema("number", "double"), nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return simpleSchema("string", "byte"), nil // base64, as encoding/json writes []byte
		}
		items, err := b.elementSchema(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &items}}}
		return s, nil
	case reflect.Map:
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
		if t.Key().Kind() != reflect.String {
			return s, nil
		}
		elem, err := b.elementSchema(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &elem}
		return s, nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return simpleSchema("object", ""), nil
		}
		return spec.Schema{}, nil
	}
	return spec.Schema{}, fmt.Errorf("openapi: no schema for Go type %v", t)
}

// elementSchema is the schema of the items of a slice or the values of a map.
func (b *schemaBuilder) elementSchema(t reflect.Type) (spec.Schema, error) {
	s, err := b.schemaOf(t)
	if err != nil {
		return s, err
	}
	addEnum(&s, t)
	if b.v3 {
		if def, ok := enforcedDefault(t, false); ok {
			s.Default = def
		}
	}
	return s, nil
}

// addEnum sets the values of a +enum string type.
func addEnum(s *spec.Schema, t reflect.Type) {
	t = derefType(t)
	if t.Kind() != reflect.String || t.Name() == "" || s.Ref.String() != "" {
		return
	}
	values := generatedEnums[typeKey(t)]
	if len(values) == 0 {
		return
	}
	s.Enum = make([]interface{}, len(values))
	for i, v := range values {
		s.Enum[i] = v
	}
}

// enforcedDefault is the default kube's openapi-gen gives a value of type t
// that the JSON decoder fills in even when absent: {} for structs, the zero
// value of a scalar that is not omitempty; none for pointers, slices, maps
// and types that decode themselves.
func enforcedDefault(t reflect.Type, omitempty bool) (interface{}, bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return nil, false
	case reflect.Struct:
		if reflect.PointerTo(t).Implements(unmarshalerType) || t == timeType {
			return nil, false
		}
		if t.NumField() == 1 && t.Field(0).Anonymous {
			return enforcedDefault(t.Field(0).Type, omitempty)
		}
		return map[string]interface{}{}, true
	}
	if omitempty {
		return nil, false
	}
	switch t.Kind() {
	case reflect.String:
		return "", true
	case reflect.Bool:
		return false, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return 0, true
	}
	return nil, false
}

// wrapRefs rewrites, in s and the schemas inside it, every $ref that has
// sibling keywords (description, default, extensions) into an allOf of the
// bare $ref, since OpenAPI 3.0 ignores the siblings of a $ref. kube does the
// same for its v3 documents.
func wrapRefs(s *spec.Schema) {
	if s == nil {
		return
	}
	if s.Ref.String() != "" {
		bare := spec.Schema{SchemaProps: spec.SchemaProps{Ref: s.Ref}}
		rest := *s
		rest.Ref = spec.Ref{}
		if !reflect.DeepEqual(rest, spec.Schema{}) {
			rest.AllOf = append([]spec.Schema{bare}, rest.AllOf...)
			*s = rest
		}
	}
	for k, p := range s.Properties {
		wrapRefs(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		wrapRefs(s.Items.Schema)
		for i := range s.Items.Schemas {
			wrapRefs(&s.Items.Schemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		wrapRefs(s.AdditionalProperties.Schema)
	}
	for i := range s.OneOf {
		wrapRefs(&s.OneOf[i])
	}
	for i := range s.AnyOf {
		wrapRefs(&s.AnyOf[i])
	}
}

// FieldDefault is the +default marker of a k8s.io/api type's field, as JSON: the type by
// its package path and name, the field by its json name.
func FieldDefault(pkgPath, typeName, jsonName string) (string, bool) {
	t, ok := generatedFieldTags[pkgPath+"."+typeName+"."+jsonName]
	return t.defaultJSON, ok && t.defaultJSON != ""
}
