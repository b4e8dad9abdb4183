package registry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestGetNotFoundStatus(t *testing.T) {
	ns := newNamespace(t)
	_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "missing")})
	st := requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	assert.Equal(t, "v1", st.APIVersion)
	assert.Equal(t, `configmaps "missing" not found`, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, "missing", st.Details.Name)
	assert.Equal(t, "configmaps", st.Details.Kind)
	assert.Empty(t, st.Details.Group)

	_, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(deployResource, ns, "missing")})
	st = requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	assert.Equal(t, "apps", st.Details.Group)
	assert.Equal(t, "deployments", st.Details.Kind)
}

func TestGetSubresources(t *testing.T) {
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("cm", nil))
	// configmaps have no status or scale subresource.
	for _, sub := range []string{"status", "scale", "bogus"} {
		_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(cmResource, ns, "cm", sub)})
		requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	}
	d := create(t, deployResource, ns, deployment("web", 4))
	resp, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(deployResource, ns, "web", "status")})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &got))
	assert.Equal(t, "Deployment", got["kind"])

	resp, err = testH.Get(context.Background(), &resourcev1.GetRequest{Ref: subRef(deployResource, ns, "web", "scale")})
	require.NoError(t, err)
	var sc struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct{ Replicas int32 }
		Status            struct {
			Replicas int32
			Selector string
		}
	}
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &sc))
	assert.Equal(t, "Scale", sc.Kind)
	assert.Equal(t, "autoscaling/v1", sc.APIVersion)
	assert.EqualValues(t, 4, sc.Spec.Replicas)
	assert.Equal(t, "app=web", sc.Status.Selector)
	assert.Equal(t, d.ResourceVersion, sc.ResourceVersion)
}

func TestGetAcceptNegotiation(t *testing.T) {
	ns := newNamespace(t)
	cm := configMap("neg", map[string]string{"a": "1", "b": "2"})
	cm.Labels = map[string]string{"l": "v"}
	created := create(t, cmResource, ns, cm)

	const tableJSON = "application/json;as=Table;g=meta.k8s.io;v=v1"
	tests := []struct {
		accept      string
		pretty      bool
		contentType string
		check       func(t *testing.T, data []byte)
	}{
		{accept: "", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			got := &corev1.ConfigMap{}
			require.NoError(t, json.Unmarshal(data, got))
			assert.Equal(t, created.UID, got.UID)
			assert.Equal(t, "ConfigMap", got.Kind)
		}},
		{accept: "*/*", contentType: MediaJSON},
		{accept: "application/json", pretty: true, contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), "\n    ", "pretty JSON is indented")
		}},
		{accept: MediaYAML, contentType: MediaYAML, check: func(t *testing.T, data []byte) {
			got := &corev1.ConfigMap{}
			require.NoError(t, yaml.Unmarshal(data, got))
			assert.Equal(t, "neg", got.Name)
			assert.Equal(t, "1", got.Data["a"])
			assert.Contains(t, string(data), "kind: ConfigMap")
		}},
		{accept: MediaProtobuf, contentType: MediaProtobuf, check: func(t *testing.T, data []byte) {
			assert.True(t, strings.HasPrefix(string(data), "k8s\x00"))
			got := &corev1.ConfigMap{}
			decode(t, &resourcev1.Body{ContentType: MediaProtobuf, Data: data}, got)
			assert.Equal(t, created.UID, got.UID)
		}},
		{accept: "text/html, application/yaml;q=0.9", contentType: MediaYAML},
		{accept: "application/vnd.kubernetes.protobuf, application/json", contentType: MediaProtobuf},
		{accept: tableJSON + ", application/json", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			tbl := &metav1.Table{}
			require.NoError(t, json.Unmarshal(data, tbl))
			assert.Equal(t, "Table", tbl.Kind)
			assert.Equal(t, "meta.k8s.io/v1", tbl.APIVersion)
			var cols []string
			for _, c := range tbl.ColumnDefinitions {
				cols = append(cols, c.Name)
			}
			assert.Equal(t, []string{"Name", "Data", "Age"}, cols)
			assert.Equal(t, created.ResourceVersion, tbl.ResourceVersion)
			require.Len(t, tbl.Rows, 1)
			require.Len(t, tbl.Rows[0].Cells, 3)
			assert.Equal(t, "neg", tbl.Rows[0].Cells[0])
			assert.EqualValues(t, 2, tbl.Rows[0].Cells[1])
			pom := &metav1.PartialObjectMetadata{}
			require.NoError(t, json.Unmarshal(tbl.Rows[0].Object.Raw, pom))
			assert.Equal(t, "PartialObjectMetadata", pom.Kind)
			assert.Equal(t, "meta.k8s.io/v1", pom.APIVersion)
			assert.Equal(t, created.UID, pom.UID)
			assert.Equal(t, map[string]string{"l": "v"}, pom.Labels)
		}},
		{accept: "application/yaml;as=Table;g=meta.k8s.io;v=v1", contentType: MediaYAML, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), "kind: Table")
		}},
		{accept: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			pom := &metav1.PartialObjectMetadata{}
			require.NoError(t, json.Unmarshal(data, pom))
			assert.Equal(t, "PartialObjectMetadata", pom.Kind)
			assert.Equal(t, "meta.k8s.io/v1", pom.APIVersion)
			assert.Equal(t, "neg", pom.Name)
			assert.NotContains(t, string(data), `"data"`)
		}},
		{accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", contentType: MediaProtobuf, check: func(t *testing.T, data []byte) {
			pom := &metav1.PartialObjectMetadata{}
			decode(t, &resourcev1.Body{ContentType: MediaProtobuf, Data: data}, pom)
			assert.Equal(t, created.UID, pom.UID)
		}},
		// A conversion kube does not serve is skipped like an unknown media type.
		{accept: "application/json;as=Table;g=example.com;v=v1, application/yaml", contentType: MediaYAML},
		// kube serves Tables only as JSON or YAML; a protobuf Table clause is not acceptable.
		{accept: "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json", contentType: MediaJSON, check: func(t *testing.T, data []byte) {
			assert.Contains(t, string(data), `"kind":"ConfigMap"`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.accept, func(t *testing.T) {
			resp, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "neg"),
				Encoding: &resourcev1.Encoding{Accept: tc.accept, Pretty: tc.pretty}})
			require.NoError(t, err)
			assert.Equal(t, tc.contentType, resp.GetBody().GetContentType())
			if tc.check != nil {
				tc.check(t, resp.GetBody().GetData())
			}
		})
	}

	for _, accept := range []string{
		"text/html",
		"application/xml, text/plain",
		"application/json;as=Table;g=meta.k8s.io;v=v2",
		"application/json;as=Deployment;g=meta.k8s.io;v=v1",
		"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
		";;;",
	} {
		t.Run("not acceptable "+accept, func(t *testing.T) {
			_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(cmResource, ns, "neg"),
				Encoding: &resourcev1.Encoding{Accept: accept}})
			requireStatus(t, err, 406, metav1.StatusReasonNotAcceptable)
		})
	}
}
