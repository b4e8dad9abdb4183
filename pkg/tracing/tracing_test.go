package tracing

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/tracing/tracingtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
	"k8s.io/component-base/tracing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tracing.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// The file is read as kube-apiserver reads it: any served version, strictly, with kube's
// validation and messages.
func TestRead(t *testing.T) {
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		cfg, err := Read(writeConfig(t, "apiVersion: apiserver.config.k8s.io/"+v+"\nkind: TracingConfiguration\nendpoint: collector:4317\nsamplingRatePerMillion: 250\n"))
		require.NoError(t, err, v)
		assert.Equal(t, "collector:4317", *cfg.Endpoint, v)
		assert.EqualValues(t, 250, *cfg.SamplingRatePerMillion, v)
	}
	cfg, err := Read(writeConfig(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"))
	require.NoError(t, err)
	assert.Nil(t, cfg.Endpoint, "no endpoint: the exporter's default, localhost:4317")

	for body, want := range map[string]string{
		"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n": "sampling rate per million must be less than or equal to one million",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n":      "sampling rate must be positive",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: http://collector:4317\n": "unsupported scheme: http",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpont: collector:4317\n":         `strict decoding error: unknown field "endpont"`,
		"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n":                               "unable to decode tracing configuration data",
		"not yaml: [": "unable to decode tracing configuration data",
	} {
		_, err := Read(writeConfig(t, body))
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), want, body)
	}
	_, err = Read(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorContains(t, err, "unable to read tracing configuration")
	assert.Error(t, (&Options{ConfigFile: filepath.Join(t.TempDir(), "missing.yaml")}).Validate())
	assert.NoError(t, (&Options{}).Validate())
}

// Without a file nothing is traced and nothing is added to the gRPC path. With one, spans go to
// the OTLP endpoint under kube's service name, and a caller's traceparent is sampled as the
// caller sampled it even at a rate of 0.
func TestTracer(t *testing.T) {
	ctx := context.Background()
	off, err := (&Options{}).New(ctx, "core", "c1")
	require.NoError(t, err)
	assert.False(t, off.On)
	assert.Empty(t, off.ServerOptions())
	assert.Empty(t, off.DialOptions())

	recv := tracingtest.Start(t)
	file := writeConfig(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+recv.Addr+"\n")
	tr, err := (&Options{ConfigFile: file}).New(ctx, "core", "c1")
	require.NoError(t, err)
	require.True(t, tr.On)
	assert.Len(t, tr.ServerOptions(), 1)
	assert.Len(t, tr.DialOptions(), 1)

	// Rate 0: a span without a sampled parent is not recorded...
	_, unsampled := tr.Tracer("test").Start(ctx, "unsampled")
	assert.False(t, unsampled.SpanContext().IsSampled())
	unsampled.End()
	// ...one whose caller sampled it is, in the caller's trace.
	parent := tracing.Propagators().Extract(ctx, propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	_, span := tr.Tracer("test").Start(parent, "sampled", oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	span.End()
	assert.Nil(t, off.Active())
	assert.NotNil(t, tr.Active())
	tr.Close(slog.Default())
	require.Eventually(t, func() bool { return len(recv.Spans()) > 0 }, 10*time.Second, 20*time.Millisecond)
	spans := recv.Spans()
	require.Len(t, spans, 1, "only the sampled span is exported")
	s := spans[0]
	assert.Equal(t, "sampled", s.Name)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.TraceID)
	assert.Equal(t, "00f067aa0ba902b7", s.ParentSpanID)
	assert.Equal(t, "apiserver", s.Resource["service.name"])
	assert.Equal(t, "c1", s.Resource["service.instance.id"])
	assert.Equal(t, "core", s.Resource["apichain.service"])
}
