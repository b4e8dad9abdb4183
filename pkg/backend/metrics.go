package backend

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/delegated"
	"github.com/apichain/apichain/pkg/metrics"
	"github.com/apichain/apichain/pkg/server"
)

// newGRPCServerMetrics are grpc-go's standard server metrics (go-grpc-middleware's Prometheus
// provider) for the calls a backend serves, under apichain_.
func newGRPCServerMetrics() *grpcprom.ServerMetrics {
	return grpcprom.NewServerMetrics(grpcprom.WithServerCounterOptions(grpcprom.WithNamespace("apichain")),
		grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramNamespace("apichain")))
}

// validateMetrics checks the metrics endpoint's options: it needs the API server to review its
// callers.
func (o *Options) validateMetrics() error {
	if o.MetricsBindAddress == "" {
		return nil
	}
	if o.AuthenticationKubeconfig == "" || o.AuthorizationKubeconfig == "" {
		return errors.New("--metrics-bind-address needs --authentication-kubeconfig and --authorization-kubeconfig: its callers are reviewed by the API server")
	}
	return nil
}

// serveMetrics serves /metrics over HTTPS on --metrics-bind-address with the backend's serving
// certificate, to callers the API server authenticates (a client certificate of
// --client-ca-file, or a token its TokenReview accepts) and allows get on /metrics (its
// SubjectAccessReview), as kube's components serve theirs.
func (b *Backend) serveMetrics(reg *prometheus.Registry) error {
	o := b.opts
	tlsCfg, err := o.Serving.TLSConfig(false)
	if err != nil {
		return fmt.Errorf("metrics endpoint TLS: %w", err)
	}
	clientCAs, err := certs.PoolFromFile(o.Serving.ClientCAFile)
	if err != nil {
		return err
	}
	clientset := func(kubeconfig string) (*kubernetes.Clientset, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kubeconfig, err)
		}
		return kubernetes.NewForConfig(cfg)
	}
	authnClient, err := clientset(o.AuthenticationKubeconfig)
	if err != nil {
		return fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	authzClient, err := clientset(o.AuthorizationKubeconfig)
	if err != nil {
		return fmt.Errorf("--authorization-kubeconfig: %w", err)
	}
	authentication := authn.Authentication{Authenticators: []authn.Authenticator{
		authn.X509Authenticator(clientCAs),
		authn.NewBearer(nil, authn.NewTokenReview(authnClient.AuthenticationV1().TokenReviews(), delegated.CacheTTL)),
	}}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{reg, metrics.KubeLibraries}, promhttp.HandlerOpts{}))
	handler := delegated.Protect(mux, authentication, delegated.NewAuthorizer(authzClient.AuthorizationV1().SubjectAccessReviews()))
	ln, err := net.Listen("tcp", o.MetricsBindAddress)
	if err != nil {
		return fmt.Errorf("metrics endpoint: listen on %s: %w", o.MetricsBindAddress, err)
	}
	b.Server.AddTransport("metrics", server.NewHTTPTransport(handler, tlsCfg, b.Log), ln)
	return nil
}
