// Package defaulting applies kube's defaulting functions the way kube's generated defaulters do
// (defaulter-gen's SetObjectDefaults_<Kind>): a type's own function first, then, field by field
// in declaration order, the functions of every nested value, through pointers, slices and maps.
// Each API group's package registers its functions by type (its defaults.go), so a kind needs no
// code of its own to be defaulted: any value of a registered type is defaulted wherever it
// appears, and the declarative `+default=` markers of k8s.io/api's types are applied from the
// generated OpenAPI tags.
package defaulting

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/apichain/apichain/pkg/openapi"
	"k8s.io/apimachinery/pkg/runtime"
)

// defaulters are the registered functions by the type they default.
var defaulters = map[reflect.Type]func(reflect.Value){}

// Register registers f for values of type T (a pointer to the value is passed); call it from
// an init function, before the first Set.
func Register[T any](f func(*T)) {
	t := reflect.TypeFor[T]()
	if _, dup := defaulters[t]; dup {
		panic("defaulting: two defaulters for " + t.String())
	}
	defaulters[t] = func(v reflect.Value) { f(v.Addr().Interface().(*T)) }
}

// walk is how a value of one type is defaulted; nil when nothing in it has defaults.
type walk func(v reflect.Value)

var plans sync.Map // reflect.Type → walk (possibly nil)

// Set applies the registered defaults to obj, a pointer to a typed object.
func Set(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	if w := planFor(v.Elem().Type()); w != nil {
		w(v.Elem())
	}
}

// Int32 sets *p to def when it is unset.
func Int32(p **int32, def int32) {
	if *p == nil {
		*p = &def
	}
}

// String sets *s to def when it is empty.
func String(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

func planFor(t reflect.Type) walk {
	if w, ok := plans.Load(t); ok {
		return w.(walk)
	}
	w := build(t, map[reflect.Type]*walk{})
	plans.Store(t, w)
	return w
}

// build makes t's walk; inProgress breaks recursion through self-referencing types (a type
// being built is assumed to have defaults and is walked through an indirection).
func build(t reflect.Type, inProgress map[reflect.Type]*walk) walk {
	if p, ok := inProgress[t]; ok {
		return func(v reflect.Value) {
			if *p != nil {
				(*p)(v)
			}
		}
	}
	if !mayHaveDefaults(t) {
		return nil
	}
	slot := new(walk)
	inProgress[t] = slot
	defer delete(inProgress, t)
	self := defaulters[t]
	var inner walk
	switch t.Kind() {
	case reflect.Struct:
		type fieldWalk struct {
			index int
			walk  walk
		}
		var fields []fieldWalk
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				if d := declaredDefault(t, f); d != nil {
					fields = append(fields, fieldWalk{i, d})
				}
			}
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				if w := build(f.Type, inProgress); w != nil {
					fields = append(fields, fieldWalk{i, w})
				}
			}
		}
		if len(fields) > 0 {
			inner = func(v reflect.Value) {
				for _, f := range fields {
					f.walk(v.Field(f.index))
				}
			}
		}
	case reflect.Pointer:
		if w := build(t.Elem(), inProgress); w != nil {
			inner = func(v reflect.Value) {
				if !v.IsNil() {
					w(v.Elem())
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if w := build(t.Elem(), inProgress); w != nil {
			inner = func(v reflect.Value) {
				for i := range v.Len() {
					w(v.Index(i))
				}
			}
		}
	case reflect.Map:
		if w := build(t.Elem(), inProgress); w != nil {
			inner = func(v reflect.Value) { // map values are not addressable: default a copy
				iter := v.MapRange()
				for iter.Next() {
					e := reflect.New(t.Elem()).Elem()
					e.Set(iter.Value())
					w(e)
					v.SetMapIndex(iter.Key(), e)
				}
			}
		}
	}
	var w walk
	switch {
	case self != nil && inner != nil:
		w = func(v reflect.Value) { self(v); inner(v) }
	case self != nil:
		w = self
	case inner != nil:
		w = inner
	}
	*slot = w
	return w
}

// declaredDefault sets a field that is unset to its type's +default marker, as kube's
// generated defaulters do with the markers of k8s.io/api's types (the markers are read into
// pkg/openapi by its generator).
func declaredDefault(t reflect.Type, f reflect.StructField) walk {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return nil
	}
	def, ok := openapi.FieldDefault(t.PkgPath(), t.Name(), name)
	if !ok {
		return nil
	}
	// A zero default ("", 0, false on a value field) changes nothing; a pointer's is set.
	probe := reflect.New(f.Type)
	if err := json.Unmarshal([]byte(def), probe.Interface()); err != nil {
		panic(fmt.Sprintf("builtin: +default=%s of %s.%s: %v", def, t, f.Name, err))
	}
	if probe.Elem().IsZero() {
		return nil
	}
	value := probe.Elem()
	return func(v reflect.Value) {
		if v.IsZero() {
			nv := reflect.New(f.Type).Elem()
			nv.Set(value)
			if nv.Kind() == reflect.Pointer { // each object gets its own copy
				c := reflect.New(nv.Type().Elem())
				c.Elem().Set(nv.Elem())
				nv = c
			}
			v.Set(nv)
		}
	}
}

// mayHaveDefaults prunes types that cannot hold a defaulted value (strings, numbers, and the
// apimachinery types every object carries), so walking an object costs only its defaulted parts.
func mayHaveDefaults(t reflect.Type) bool {
	if _, ok := defaulters[t]; ok {
		return true
	}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && declaredDefault(t, f) != nil {
				return true
			}
		}
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
	default:
		return false
	}
	switch t.PkgPath() {
	case "k8s.io/apimachinery/pkg/apis/meta/v1", "k8s.io/apimachinery/pkg/api/resource", "k8s.io/apimachinery/pkg/runtime",
		"k8s.io/apimachinery/pkg/util/intstr":
		return false
	}
	return true
}
