package filters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/gateway/audit"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
)

// auditBodyLimit is the most of a request or response body an event carries (kube's request
// limit); a longer body is passed on untouched and not recorded.
const auditBodyLimit = 3 << 20

// WithAudit records the request's audit event (nil auditor: no auditing): RequestReceived
// when it arrives, ResponseStarted when a long-running response starts, ResponseComplete
// with the response status when it ends, Panic if the handler panics. It runs after
// authentication, so the event names the user who sent the request; the impersonation and
// authorization filters add the user acted as and the decision.
func WithAudit(next http.Handler, a *audit.Auditor) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.From(r.Context())
		info, _ := requestinfo.From(r.Context())
		// A gRPC call's resource is in its message: the gRPC server's interceptor describes it,
		// which applies the policy and starts the event. Its bodies are framed messages, which
		// the interceptor records; of gRPC calls only a watch has a ResponseStarted stage.
		grpcCall := IsGRPC(r)
		var rec *audit.Record
		if grpcCall {
			rec = a.StartGRPC(r, u, info)
		} else if rec = a.Start(r, u, info); rec == nil {
			next.ServeHTTP(w, r)
			return
		} else {
			rec.Emit(auditinternal.StageRequestReceived, nil)
		}
		r = r.WithContext(audit.WithRecord(r.Context(), rec))
		longRunning := IsLongRunning(r)
		if !grpcCall && rec.NeedsRequestObject() && r.Body != nil && r.Body != http.NoBody && !longRunning {
			head, err := io.ReadAll(io.LimitReader(r.Body, auditBodyLimit+1))
			if err == nil && len(head) <= auditBodyLimit {
				rec.RequestObject(r.Header.Get("Content-Type"), head)
			}
			r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		}
		streaming := longRunning && (!grpcCall || strings.HasSuffix(r.URL.Path, "/Watch"))
		aw := &auditWriter{ResponseWriter: w, rec: rec, longRunning: streaming, capture: !longRunning,
			keep: !grpcCall && rec.Level().GreaterOrEqual(auditinternal.LevelRequestResponse)}
		defer func() {
			if p := recover(); p != nil {
				rec.Emit(auditinternal.StagePanic, &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
					Message: fmt.Sprintf("APIServer panic'd: %v", p)})
				panic(p)
			}
		}()
		next.ServeHTTP(aw, r)
		rec.Emit(auditinternal.StageResponseComplete, aw.status())
	})
}

// FailedAuthentication records the event of a request that failed authentication, as kube's
// WithFailedAuthenticationAudit does: no user, stage ResponseStarted, the 401.
func FailedAuthentication(a *audit.Auditor, r *http.Request, st *metav1.Status) {
	if a == nil {
		return
	}
	info, _ := requestinfo.From(r.Context())
	rec := a.Start(r, nil, info)
	if rec == nil {
		return
	}
	body, _ := json.Marshal(st)
	rec.ResponseObject("application/json", body)
	rec.Emit(auditinternal.StageResponseStarted, st)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// auditWriter notes the response's code and, where the level asks for it, its body.
type auditWriter struct {
	http.ResponseWriter
	rec         *audit.Record
	longRunning bool // has a ResponseStarted stage
	capture     bool // the body is the response's object (not a stream)
	keep        bool // keep the body for responseObject
	code        int
	body        bytes.Buffer
	overflow    bool
}

func (w *auditWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		if w.longRunning {
			w.rec.Emit(auditinternal.StageResponseStarted, &metav1.Status{Code: int32(code)})
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	// Errors are kept whatever the level: their Status is the event's responseStatus.
	if (w.keep || w.code >= 400) && w.capture && !w.overflow {
		if w.body.Len()+len(p) > auditBodyLimit {
			w.overflow = true
			w.body.Reset()
		} else {
			w.body.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *auditWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the event's responseStatus: the Status a failed request answered with, or the
// code; the body becomes the responseObject at RequestResponse level.
func (w *auditWriter) status() *metav1.Status {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	st := &metav1.Status{Code: int32(code)}
	if w.body.Len() == 0 || w.overflow {
		return st
	}
	ct := w.Header().Get("Content-Type")
	if code >= 400 {
		var parsed metav1.Status
		if json.Unmarshal(w.body.Bytes(), &parsed) == nil && parsed.Kind == "Status" {
			st = &parsed
			st.Code = int32(code)
		}
	}
	w.rec.ResponseObject(ct, w.body.Bytes())
	return st
}
