// Package proxy forwards the requests of remote APIServices to their aggregated API servers,
// as kube's aggregator proxies them: the gateway hands each request over as an HTTP exchange
// on a gRPC stream (apichain.proxy.v1.ProxyService), and this package replays it to the
// server behind the APIService's Service, with the caller's identity in front-proxy headers,
// through apimachinery's upgrade-aware proxy (kube's own), so streamed responses and upgraded
// connections (exec, attach, port-forward) behave as on kube.
package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	proxyv1 "github.com/apichain/apichain/gen/apichain/proxy/v1"
	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	oteltrace "go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/component-base/tracing"
)

// Lookup finds the APIService of a group/version.
type Lookup func(ctx context.Context, group, version string) (*apiregistration.APIService, error)

// Server is the aggregator's ProxyService.
type Server struct {
	proxyv1.UnimplementedProxyServiceServer
	lookup  Lookup
	resolve Resolver
	// endpoints reads Services and EndpointSlices (core's), for resolving and checking;
	// routed: always to an endpoint (--enable-aggregator-routing).
	endpoints *Endpoints
	routed    bool
	// clientCert is the front-proxy client certificate presented to aggregated servers (none:
	// they see an unauthenticated client).
	clientCert *certs.KeyPair
	// tracer traces each proxied call and carries the trace context to the aggregated
	// server, as kube's aggregator does (nil: tracing is off).
	tracer oteltrace.TracerProvider

	mu         sync.Mutex
	transports map[string]*http.Transport // by TLS settings
	// broken are the APIServices whose server could not be reached, since when and why: their
	// requests fail fast until the availability check (asked for at once) decides.
	broken   map[string]failure
	failures chan struct{}
}

// failure is a server that could not be reached.
type failure struct {
	at  time.Time
	err error
}

// breakFor is how long requests to an APIService whose server could not be reached fail at
// once, without trying it; its availability is checked again meanwhile.
const breakFor = 5 * time.Second

// NewServer forwards to the servers lookup finds, presenting clientCert: with routed, always
// to a ready endpoint of the Service; otherwise to one if its EndpointSlices list any, else to
// its cluster DNS name.
func NewServer(lookup Lookup, endpoints *Endpoints, routed bool, clientCert *certs.KeyPair) *Server {
	var resolve Resolver = Auto{Endpoints: endpoints}
	if routed {
		resolve = endpoints
	}
	return &Server{lookup: lookup, resolve: resolve, endpoints: endpoints, routed: routed, clientCert: clientCert,
		transports: map[string]*http.Transport{}, broken: map[string]failure{}, failures: make(chan struct{}, 1)}
}

// Failures reports that a server could not be reached: the availability controller checks
// again at once rather than at its next resync.
func (s *Server) Failures() <-chan struct{} { return s.failures }

// fail records that a's server could not be reached.
func (s *Server) fail(a *apiregistration.APIService, err error) {
	s.mu.Lock()
	s.broken[a.Name] = failure{at: time.Now(), err: err}
	s.mu.Unlock()
	select {
	case s.failures <- struct{}{}:
	default:
	}
}

// brokenNow is the recent failure to reach a's server, if any.
func (s *Server) brokenNow(a *apiregistration.APIService) (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.broken[a.Name]
	if ok && time.Since(f.at) > breakFor {
		delete(s.broken, a.Name)
		return failure{}, false
	}
	return f, ok
}

// Exchange replays one HTTP exchange to the APIService's server.
func (s *Server) Exchange(stream proxyv1.ProxyService_ExchangeServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	head := first.GetHead()
	if head == nil {
		return statusError(apierrors.NewBadRequest("the exchange must start with the request head"))
	}
	a, err := s.lookup(ctx, head.GetGroup(), head.GetVersion())
	if apierrors.IsNotFound(err) || (err == nil && a.Spec.Service == nil) {
		return rpcstatus.NotServed(head.GetGroup() + "/" + head.GetVersion())
	}
	if err != nil {
		return statusError(err)
	}
	if c := a.Status.AvailableCondition(); c == nil || c.Status != apiregistration.ConditionTrue {
		return statusError(unavailable(a))
	}
	if f, ok := s.brokenNow(a); ok {
		return statusError(apierrors.NewServiceUnavailable(fmt.Sprintf("service unavailable: APIService %s could not be reached (%v); its availability is being checked",
			a.Name, f.err)))
	}
	u, ok := user.From(ctx)
	if !ok {
		return statusError(apierrors.NewInternalError(fmt.Errorf("missing user")))
	}
	host, err := s.resolve.Resolve(ctx, a.Spec.Service)
	if err != nil {
		return statusError(apierrors.NewServiceUnavailable("service unavailable"))
	}
	transport, err := s.transport(a)
	if err != nil {
		return statusError(apierrors.NewInternalError(err))
	}
	req, err := request(ctx, head, host)
	if err != nil {
		return statusError(apierrors.NewBadRequest(err.Error()))
	}
	upgrade := httpstream.IsUpgradeRequest(req)
	w := newStreamWriter(stream)
	if !upgrade {
		req.Body = &bodyReader{stream: stream}
	} else {
		req.Body = http.NoBody
	}
	setFrontProxyHeaders(req.Header, u)
	location := &url.URL{Scheme: "https", Host: host, Path: req.URL.Path, RawQuery: req.URL.RawQuery}
	var rt http.RoundTripper = transport
	if s.tracer != nil && !upgrade { // an upgrade dials through the transport itself
		rt = tracing.WrapperFor(s.tracer)(transport)
	}
	handler := utilproxy.NewUpgradeAwareHandler(location, rt, false, upgrade, responder{fail: func(err error) { s.fail(a, err) }})
	handler.ServeHTTP(w, req)
	return w.finish()
}

// statusError is err as the call's status.
func statusError(err error) error {
	var st metav1.Status
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return rpcstatus.FromKube(&st)
}

// request is the head as an http.Request to host.
func request(ctx context.Context, head *proxyv1.RequestHead, host string) (*http.Request, error) {
	target, err := url.ParseRequestURI(head.GetRequestUri())
	if err != nil {
		return nil, fmt.Errorf("request URI: %w", err)
	}
	target.Scheme, target.Host = "https", host
	req, err := http.NewRequestWithContext(ctx, head.GetMethod(), target.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range head.GetHeaders() {
		for _, v := range h.GetValues() {
			req.Header.Add(h.GetName(), v)
		}
	}
	// What only the gateway may say about a caller never reaches the server.
	req.Header.Del("Authorization")
	for name := range req.Header {
		if l := strings.ToLower(name); strings.HasPrefix(l, "impersonate-") || strings.HasPrefix(l, "x-remote-") {
			req.Header.Del(name)
		}
	}
	if cl := req.Header.Get("Content-Length"); cl != "" {
		fmt.Sscan(cl, &req.ContentLength) //nolint:errcheck // a bad length stays unknown
	}
	return req, nil
}

// setFrontProxyHeaders says who the caller is, as kube's aggregator does.
func setFrontProxyHeaders(h http.Header, u *user.User) {
	h.Set("X-Remote-User", u.Name)
	if u.UID != "" {
		h.Set("X-Remote-Uid", u.UID)
	}
	for _, g := range u.Groups {
		h.Add("X-Remote-Group", g)
	}
	for k, vs := range u.Extra {
		for _, v := range vs {
			h.Add("X-Remote-Extra-"+headerKeyEscape(k), v)
		}
	}
}

// headerKeyEscape is kube's escaping of an extra key in a header name: what is not a legal
// header-name byte (or is %) is percent-encoded.
func headerKeyEscape(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c != '%' && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&'*+-.^_`|~", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// TraceWith traces the proxied calls with tp (nil: not traced).
func (s *Server) TraceWith(tp oteltrace.TracerProvider) { s.tracer = tp }

// transport is the HTTP transport to a's server: its CA bundle (or no verification), its
// Service's name expected in the certificate, and the front-proxy client certificate.
func (s *Server) transport(a *apiregistration.APIService) (*http.Transport, error) {
	svc := a.Spec.Service
	serverName := svc.Name + "." + svc.Namespace + ".svc"
	sum := sha256.Sum256(a.Spec.CABundle)
	key := fmt.Sprintf("%s|%x|%t", serverName, sum, a.Spec.InsecureSkipTLSVerify)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.transports[key]; ok {
		return t, nil
	}
	cfg := &tls.Config{ServerName: serverName, InsecureSkipVerify: a.Spec.InsecureSkipTLSVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // the APIService asks for it
	if len(a.Spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(a.Spec.CABundle) {
			return nil, fmt.Errorf("apiservice %s: caBundle holds no PEM certificate", a.Name)
		}
		cfg.RootCAs = pool
	}
	if s.clientCert != nil {
		cfg.GetClientCertificate = s.clientCert.GetClientCertificate
	}
	t := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 25,
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second}
	s.transports[key] = t
	return t, nil
}

// responder answers a failure to reach the server as kube's aggregator does, 503 with the
// error, and reports it.
type responder struct{ fail func(error) }

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	if req.Context().Err() == nil && !errors.Is(err, context.Canceled) { // not a client that went away
		r.fail(err)
	}
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// bodyReader reads the request body from the exchange's data messages until the gateway
// half-closes.
type bodyReader struct {
	stream proxyv1.ProxyService_ExchangeServer
	buf    []byte
}

func (b *bodyReader) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		m, err := b.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the half-close
		}
		b.buf = m.GetData()
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *bodyReader) Close() error { return nil }

var _ io.ReadCloser = (*bodyReader)(nil)
