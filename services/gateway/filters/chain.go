package filters

import (
	"log/slog"
	"net/http"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
)

// ChainConfig is what the filters need.
type ChainConfig struct {
	Log                         *slog.Logger
	RequestTimeout              time.Duration
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	Authentication              authn.Authentication
	Authorizer                  authz.Authorizer
	// Auditor records audit events (nil: auditing is off).
	Auditor        *audit.Auditor
	HSTSDirectives string
	// Metrics counts every request (nil: not counted).
	Metrics  *RequestMetrics
	InFlight *server.SafeWaitGroup
	// PriorityAndFairness is the priority-and-fairness filter, in max-in-flight's place (nil:
	// max-in-flight).
	PriorityAndFairness func(http.Handler) http.Handler
	// RetryAfter, once closed, makes every request get 429 + Retry-After
	// (--shutdown-send-retry-after after the shutdown delay); nil disables it.
	RetryAfter <-chan struct{}
	// Tracer traces requests as kube-apiserver does (nil: tracing is off, and nothing is added).
	Tracer oteltrace.TracerProvider
}

// BuildHandlerChain wraps handler in the gateway's filters. Read it bottom-up for the order a
// request passes them: the last wrapper is the outermost filter, as in kube's
// DefaultBuildHandlerChain.
func BuildHandlerChain(handler http.Handler, c ChainConfig) http.Handler {
	h := handler
	h = WithAuthorization(h, c.Authorizer)
	h = withFilterSpan(h, c.Tracer, "authorization")
	if c.PriorityAndFairness != nil {
		h = c.PriorityAndFairness(h)
		h = withFilterSpan(h, c.Tracer, "priorityandfairness")
	} else {
		h = WithMaxInFlightLimit(h, c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight)
	}
	h = WithImpersonation(h, c.Authorizer, c.Log)
	h = withFilterSpan(h, c.Tracer, "impersonation")
	h = WithAudit(h, c.Auditor)
	h = withFilterSpan(h, c.Tracer, "audit")
	if c.Tracer != nil {
		h = WithTracing(h, c.Tracer)
	}
	h = WithAuthentication(h, c.Authentication, c.Log, c.Auditor)
	h = withFilterSpan(h, c.Tracer, "authentication")
	h = WithTimeout(h)
	h = WithRequestDeadline(h, c.RequestTimeout)
	h = WithWaitGroup(h, c.InFlight)
	h = WithHSTS(h, c.HSTSDirectives)
	h = WithCacheControl(h)
	if c.RetryAfter != nil {
		h = WithRetryAfter(h, c.RetryAfter)
	}
	h = WithRequestMetrics(h, c.Metrics)
	h = WithPrettyPrint(h)
	h = WithRequestInfo(h, requestinfo.NewResolver())
	h = WithPanicRecovery(h, c.Log)
	h = WithAuditID(h)
	h = WithGRPCStatus(h)
	return h
}
