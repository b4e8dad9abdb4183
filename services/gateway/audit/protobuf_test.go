package audit

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

func encodeProtobuf(t testing.TB, obj runtime.Object) []byte {
	s := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(s))
	codecs := serializer.NewCodecFactory(s)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	data, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	require.NoError(t, err)
	return data
}

// kubectl sends creates as protobuf: the event still names the object.
func TestProtobufMeta(t *testing.T) {
	data := encodeProtobuf(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "u-1",
		ResourceVersion: "42", Labels: map[string]string{"a": "b"}}, StringData: map[string]string{"password": "x"}})
	m, ok := protobufMeta(data)
	require.True(t, ok)
	assert.Equal(t, objectMeta{Name: "creds", Namespace: "team", UID: "u-1", ResourceVersion: "42"}, m)
	_, ok = protobufMeta([]byte(`{"metadata":{"name":"x"}}`))
	assert.False(t, ok)
}

// FuzzProtobufMeta: any body is read or refused, never a panic.
func FuzzProtobufMeta(f *testing.F) {
	f.Add(encodeProtobuf(f, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", GenerateName: "g"}}))
	f.Add([]byte("k8s\x00"))
	f.Add([]byte("k8s\x00\x12\x02\x0a\xff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, ok := protobufMeta(body)
		if !ok && m != (objectMeta{}) {
			t.Fatalf("refused with %+v", m)
		}
		if ok && !bytes.HasPrefix(body, protobufMagic) {
			t.Fatal("read a body without kube's protobuf magic")
		}
	})
}
