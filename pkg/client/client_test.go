package client

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
)

func TestHostPort(t *testing.T) {
	for host, want := range map[string]string{
		"https://127.0.0.1:6443":  "127.0.0.1:6443",
		"https://api.example.com": "api.example.com:443",
		"https://[::1]:6443/":     "[::1]:6443",
		"localhost:6443":          "localhost:6443",
	} {
		got, err := hostPort(host)
		require.NoError(t, err, host)
		assert.Equal(t, want, got, host)
	}
	_, err := hostPort("http://127.0.0.1:8080")
	assert.ErrorContains(t, err, "over https")
}

func TestImpersonationHeaders(t *testing.T) {
	kv, err := impersonation(rest.ImpersonationConfig{UserName: "bob", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x", "y"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"Impersonate-User", "bob", "Impersonate-Uid", "1", "Impersonate-Group", "a", "Impersonate-Group", "b",
		"Impersonate-Extra-scopes", "x", "Impersonate-Extra-scopes", "y"}, kv)
	_, err = impersonation(rest.ImpersonationConfig{UserName: "bob", Extra: map[string][]string{"example.com/key": {"x"}}})
	assert.ErrorContains(t, err, `"example.com/key"`)
	_, err = New(&rest.Config{Host: "https://127.0.0.1:6443", ExecProvider: &clientcmdapi.ExecConfig{Command: "x"}})
	assert.ErrorContains(t, err, "not supported")
}

// Answers decode from kube's protobuf (built-in kinds) and from JSON, type included.
func TestDecodeAnswers(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"}, Data: map[string]string{"k": "v"}}
	var pb bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(cm, &pb))
	got, err := decode(&resourcev1.Body{ContentType: mediaProtobuf, Data: pb.Bytes()}, &corev1.ConfigMap{})
	require.NoError(t, err)
	assert.Equal(t, cm, got)

	js, err := encode(cm)
	require.NoError(t, err)
	got, err = decode(js, &corev1.ConfigMap{})
	require.NoError(t, err)
	assert.Equal(t, cm, got)
	u, err := decode(js, &unstructured.Unstructured{})
	require.NoError(t, err)
	assert.Equal(t, "ConfigMap", u.GetKind())

	_, err = decode(&resourcev1.Body{ContentType: mediaProtobuf, Data: pb.Bytes()}, &unstructured.Unstructured{})
	assert.ErrorContains(t, err, "not kube's protobuf encoding")
	_, err = decode(&resourcev1.Body{ContentType: mediaProtobuf, Data: []byte("k8s\x00\xff\xff")}, &corev1.ConfigMap{})
	assert.Error(t, err)
	_, err = decode(&resourcev1.Body{ContentType: "application/yaml", Data: []byte("a: b")}, &corev1.ConfigMap{})
	assert.ErrorContains(t, err, "not JSON or protobuf")

	// Built-in kinds ask for protobuf, others for JSON.
	assert.Equal(t, mediaProtobuf+", "+mediaJSON, For[corev1.ConfigMap, corev1.ConfigMapList](nil, corev1.SchemeGroupVersion.WithResource("configmaps")).accept.GetAccept())
	assert.Equal(t, mediaJSON, For[unstructured.Unstructured, unstructured.UnstructuredList](nil, corev1.SchemeGroupVersion.WithResource("configmaps")).accept.GetAccept())
}
