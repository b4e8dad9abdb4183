package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// printerColumns are a version's additionalPrinterColumns as kube's table convertor shows
// them: each a JSONPath into the object, its first result as the cell, typed by the column.
type printerColumns struct {
	defs  []metav1.TableColumnDefinition
	paths []*jsonpath.JSONPath
}

func newPrinterColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) (*printerColumns, error) {
	pc := &printerColumns{}
	for _, col := range cols {
		path := jsonpath.New(col.Name)
		if err := path.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("unrecognized column definition %q", col.JSONPath)
		}
		path.AllowMissingKeys(true)
		desc := col.Description
		if desc == "" {
			desc = fmt.Sprintf("Custom resource definition column (in JSONPath format): %s", col.JSONPath)
		}
		pc.paths = append(pc.paths, path)
		pc.defs = append(pc.defs, metav1.TableColumnDefinition{Name: col.Name, Type: col.Type, Format: col.Format,
			Description: desc, Priority: col.Priority})
	}
	return pc, nil
}

func (pc *printerColumns) cells(o runtime.Object) []any {
	content := o.(*unstructured.Unstructured).UnstructuredContent()
	out := make([]any, 0, len(pc.paths))
	var buf bytes.Buffer
	for i, path := range pc.paths {
		results, err := path.FindResults(content)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			out = append(out, nil)
			continue
		}
		value := results[0][0].Interface()
		if pc.defs[i].Type == "string" {
			if err := path.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err == nil {
				out = append(out, buf.String())
			} else {
				out = append(out, nil)
			}
			buf.Reset()
			continue
		}
		out = append(out, cellForJSONValue(pc.defs[i].Type, value))
	}
	return out
}

// cellForJSONValue types a value as kube's table convertor does; nil when it does not fit.
func cellForJSONValue(columnType string, value any) any {
	switch columnType {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "string":
		if s, ok := value.(string); ok {
			return s
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(t)
		}
	}
	return nil
}
