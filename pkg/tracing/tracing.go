// Package tracing configures OpenTelemetry tracing as kube-apiserver configures it:
// --tracing-config-file names an apiserver.config.k8s.io TracingConfiguration (v1, v1beta1 or
// v1alpha1: an OTLP gRPC endpoint, default localhost:4317, and a sampling rate per million,
// default 0, so only requests whose caller sampled them are traced), decoded strictly and
// validated with kube's rules; spans are batched to the exporter by component-base's provider,
// which samples a request whose caller sent a W3C traceparent as the caller did.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// ServiceName is the service.name of every process's spans, kube-apiserver's: the split is one
// API server to its users. Which process made a span is in its apichain.service attribute.
const ServiceName = "apiserver"

// codecs decode the configuration file; made at the first read, so a process without one
// pays nothing at start.
var codecs = sync.OnceValue(func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
})

// Options are kube's tracing flag.
type Options struct {
	// ConfigFile is the TracingConfiguration file; empty turns tracing off.
	ConfigFile string
}

// AddFlags registers --tracing-config-file.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "tracing-config-file", o.ConfigFile, "File with apiserver tracing configuration.")
}

// Validate reads and checks the file, so a bad one stops the process at start.
func (o *Options) Validate() error {
	if o.ConfigFile == "" {
		return nil
	}
	_, err := Read(o.ConfigFile)
	return err
}

// Read decodes and validates a TracingConfiguration file.
func Read(file string) (*tracingapi.TracingConfiguration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unable to read tracing configuration from %q: %w", file, err)
	}
	internal := &apiserver.TracingConfiguration{}
	if err := runtime.DecodeInto(codecs().UniversalDecoder(), data, internal); err != nil {
		return nil, fmt.Errorf("unable to decode tracing configuration data: %w", err)
	}
	if errs := tracingapi.ValidateTracingConfiguration(&internal.TracingConfiguration, nil, nil); len(errs) > 0 {
		return nil, fmt.Errorf("failed to validate tracing configuration: %w", errs.ToAggregate())
	}
	return &internal.TracingConfiguration, nil
}

// Tracer is a process's tracing: its provider, and whether it was configured.
type Tracer struct {
	tracing.TracerProvider
	// On is false without a configuration file: nothing is traced and nothing is added to a
	// request's path.
	On bool
}

// New makes the process's tracer provider from the options: a no-op one without a file.
// service is the apichain service (gateway, core, ...) and instance its instance id.
func (o *Options) New(ctx context.Context, service, instance string) (*Tracer, error) {
	if o.ConfigFile == "" {
		return &Tracer{TracerProvider: tracing.NewNoopTracerProvider()}, nil
	}
	cfg, err := Read(o.ConfigFile)
	if err != nil {
		return nil, err
	}
	// As kube-apiserver: OpenTelemetry's own metrics are not used, and would only grow.
	otel.SetMeterProvider(noop.NewMeterProvider())
	tp, err := tracing.NewProvider(ctx, cfg, nil, []resource.Option{resource.WithAttributes(
		semconv.ServiceNameKey.String(ServiceName),
		semconv.ServiceInstanceIDKey.String(instance),
		attribute.String("apichain.service", service),
	)})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return &Tracer{TracerProvider: tp, On: true}, nil
}

// Close flushes the spans not yet exported, for at most 5 s, when the process stops.
func (t *Tracer) Close(log *slog.Logger) {
	if t == nil || !t.On {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: flushing the last spans failed", "err", err)
	}
}

// Active is the provider when tracing is on, nil when it is off (so filters are left out).
func (t *Tracer) Active() oteltrace.TracerProvider {
	if t == nil || !t.On {
		return nil
	}
	return t.TracerProvider
}

// ServerOptions trace each gRPC call a server receives (otelgrpc), as a child of the caller's
// span; none when tracing is off.
func (t *Tracer) ServerOptions() []grpc.ServerOption {
	if t == nil || !t.On {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(t.otelgrpcOptions()...))}
}

// DialOptions trace each gRPC call a client makes (otelgrpc) and carry the trace context on;
// none when tracing is off.
func (t *Tracer) DialOptions() []grpc.DialOption {
	if t == nil || !t.On {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.otelgrpcOptions()...))}
}

func (t *Tracer) otelgrpcOptions() []otelgrpc.Option {
	return []otelgrpc.Option{otelgrpc.WithTracerProvider(t.TracerProvider), otelgrpc.WithPropagators(tracing.Propagators())}
}
