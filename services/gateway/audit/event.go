package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	pkgaudit "github.com/apichain/apichain/pkg/audit"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	kaudit "k8s.io/apiserver/pkg/audit"
	"sigs.k8s.io/yaml"
)

// The authorizer's annotations, as kube names them.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
)

// Auditor starts a record for each request the policy audits.
type Auditor struct {
	policy *Policy
	sink   Sink
	now    func() time.Time
}

// New audits by policy into sink.
func New(policy *Policy, sink Sink) *Auditor {
	return &Auditor{policy: policy, sink: sink, now: time.Now}
}

// Record is one request's event as it passes the stages; the filters fill it in (the
// authorizer's decision, the impersonated user) and each stage emits a copy.
type Record struct {
	mu     sync.Mutex
	ev     auditv1.Event
	omit   []auditinternal.Stage
	sink   Sink
	now    func() time.Time
	reqObj *runtime.Unknown
	resObj *runtime.Unknown
	result *metav1.Status // the outcome when the HTTP status does not tell it (gRPC)
	// pending applies the policy to a gRPC call once it is described; until then the level is
	// unknown, and pendingInfo (the path's) is the description if nothing better comes.
	pending     func(*requestinfo.RequestInfo) kaudit.RequestAuditConfig
	pendingInfo *requestinfo.RequestInfo
}

type recordKey struct{}

// WithRecord stores rec in ctx.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// From returns the request's record, nil when the request is not audited. Every method of a
// nil record does nothing.
func From(ctx context.Context) *Record {
	rec, _ := ctx.Value(recordKey{}).(*Record)
	return rec
}

// Start returns the record of a request by u (nil when authentication failed), or nil when
// the policy does not audit it.
func (a *Auditor) Start(r *http.Request, u *user.User, info *requestinfo.RequestInfo) *Record {
	cfg := a.policy.Evaluate(u, info)
	if cfg.Level == auditinternal.LevelNone {
		return nil
	}
	rec := a.newRecord(r, u, info)
	rec.ev.Level, rec.omit = auditv1.Level(cfg.Level), cfg.OmitStages
	return rec
}

// StartGRPC returns the record of a gRPC call, whose resource is in its message: the policy
// is applied, and RequestReceived emitted, when the gRPC server describes the call (Describe),
// or with info, the path's, when a filter answers the call before the server reads it.
func (a *Auditor) StartGRPC(r *http.Request, u *user.User, info *requestinfo.RequestInfo) *Record {
	rec := a.newRecord(r, u, info)
	rec.pending = func(info *requestinfo.RequestInfo) kaudit.RequestAuditConfig { return a.policy.Evaluate(u, info) }
	rec.pendingInfo = info
	return rec
}

func (a *Auditor) newRecord(r *http.Request, u *user.User, info *requestinfo.RequestInfo) *Record {
	rec := &Record{sink: a.sink, now: a.now}
	rec.ev = auditv1.Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()},
		AuditID:                  types.UID(pkgaudit.IDFrom(r.Context())),
		RequestURI:               r.URL.RequestURI(),
		User:                     u.Info(),
		SourceIPs:                sourceIPs(r),
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(a.now()),
	}
	rec.describe(info, r.Method)
	return rec
}

func (rec *Record) describe(info *requestinfo.RequestInfo, method string) {
	rec.ev.Verb = strings.ToLower(method)
	rec.ev.ObjectRef = nil
	if info == nil {
		return
	}
	rec.ev.Verb = info.Verb
	if info.IsResourceRequest {
		rec.ev.ObjectRef = &auditv1.ObjectReference{Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource}
	}
}

// Describe replaces the request's verb and object with info's (a gRPC call, whose resource is
// in the message rather than the path). A gRPC call's record is then audited by the policy's
// rule for info, from RequestReceived on.
func (rec *Record) Describe(info *requestinfo.RequestInfo) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.describe(info, "")
	pending := rec.pending
	rec.pending, rec.pendingInfo = nil, nil
	if pending != nil {
		cfg := pending(info)
		rec.ev.Level, rec.omit = auditv1.Level(cfg.Level), cfg.OmitStages
	}
	rec.mu.Unlock()
	if pending != nil {
		rec.Emit(auditinternal.StageRequestReceived, nil)
	}
}

// Level is the level the request is audited at; None for a nil record.
func (rec *Record) Level() auditinternal.Level {
	if rec == nil {
		return auditinternal.LevelNone
	}
	return auditinternal.Level(rec.ev.Level)
}

// Annotate adds an annotation (the authorizer's decision and reason).
func (rec *Record) Annotate(key, value string) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ev.Annotations == nil {
		rec.ev.Annotations = map[string]string{}
	}
	rec.ev.Annotations[key] = value
}

// Impersonated records the user the request acts as and the constrained-impersonation verb
// that allowed it ("" for legacy impersonation); user stays the one who sent it.
func (rec *Record) Impersonated(u *user.User, constraint string) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	info := u.Info()
	rec.ev.ImpersonatedUser = &info
	if constraint != "" {
		rec.ev.AuthenticationMetadata = &auditv1.AuthenticationMetadata{ImpersonationConstraint: constraint}
	}
}

// NeedsRequestObject reports whether RequestObject would use the body: at Request level and
// above, and for a create, whose object names what is created.
func (rec *Record) NeedsRequestObject() bool {
	if rec == nil {
		return false
	}
	return rec.Level().GreaterOrEqual(auditinternal.LevelRequest) || rec.ev.Verb == "create" && rec.ev.ObjectRef != nil
}

// RequestObject completes the object reference from the request body's metadata, as kube
// does at every level, and records the body at Request level and above.
func (rec *Record) RequestObject(contentType string, body []byte) {
	if rec == nil {
		return
	}
	obj := asJSON(contentType, body)
	var m objectMeta
	if obj != nil {
		var meta struct{ Metadata objectMeta }
		_ = json.Unmarshal(obj.Raw, &meta)
		m = meta.Metadata
	} else if pm, ok := protobufMeta(body); ok {
		m = pm
	} else {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if ref := rec.ev.ObjectRef; ref != nil {
		ref.Namespace = cmp.Or(ref.Namespace, m.Namespace)
		ref.Name = cmp.Or(ref.Name, m.Name)
		ref.UID = cmp.Or(ref.UID, types.UID(m.UID))
		ref.ResourceVersion = cmp.Or(ref.ResourceVersion, m.ResourceVersion)
	}
	if obj != nil && rec.Level().GreaterOrEqual(auditinternal.LevelRequest) {
		rec.reqObj = obj
	}
}

// ResponseObject records the response body, at RequestResponse level.
func (rec *Record) ResponseObject(contentType string, body []byte) {
	if !rec.Level().GreaterOrEqual(auditinternal.LevelRequestResponse) {
		return
	}
	obj := asJSON(contentType, body)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.resObj = obj
}

// Result records the request's outcome for the final stage, overriding the HTTP status.
func (rec *Record) Result(st *metav1.Status) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.result = st
}

// Emit sends the event of a stage, unless the policy omits it. status is the response's
// (nil before there is one); the request and response objects go with the final stages.
func (rec *Record) Emit(stage auditinternal.Stage, status *metav1.Status) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	if info := rec.pendingInfo; rec.pending != nil {
		rec.mu.Unlock()
		rec.Describe(info)
		rec.mu.Lock()
	}
	if rec.ev.Level == auditv1.LevelNone || slices.Contains(rec.omit, stage) {
		rec.mu.Unlock()
		return
	}
	ev := rec.ev.DeepCopy()
	if rec.result != nil && (stage == auditinternal.StageResponseComplete || stage == auditinternal.StagePanic) {
		status = rec.result
	}
	rec.mu.Unlock()
	ev.Stage = auditv1.Stage(stage)
	ev.StageTimestamp = metav1.NewMicroTime(rec.now())
	if status != nil {
		st := *status
		st.TypeMeta = metav1.TypeMeta{}
		ev.ResponseStatus = &st
	}
	if stage == auditinternal.StageRequestReceived {
		ev.Annotations = nil
	}
	if stage == auditinternal.StageResponseComplete || stage == auditinternal.StagePanic || status != nil && status.Code >= 400 {
		ev.RequestObject, ev.ResponseObject = rec.reqObj, rec.resObj
	}
	rec.sink.Process(ev)
}

// asJSON is the body as an event carries it: JSON, with YAML converted; protobuf and other
// bodies are not recorded.
func asJSON(contentType string, body []byte) *runtime.Unknown {
	mt, _, _ := mime.ParseMediaType(contentType)
	if len(body) == 0 {
		return nil
	}
	switch {
	case strings.HasSuffix(mt, "json"):
	case strings.HasSuffix(mt, "yaml"):
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return nil
		}
	default:
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, body) != nil {
		return nil
	}
	return &runtime.Unknown{Raw: buf.Bytes(), ContentType: runtime.ContentTypeJSON}
}

// sourceIPs is kube's list: X-Forwarded-For, X-Real-Ip, then the peer's address.
func sourceIPs(r *http.Request) []string {
	var out []string
	add := func(s string) {
		if ip := net.ParseIP(strings.TrimSpace(s)); ip != nil {
			for _, o := range out {
				if o == ip.String() {
					return
				}
			}
			out = append(out, ip.String())
		}
	}
	for _, h := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		add(h)
	}
	add(r.Header.Get("X-Real-Ip"))
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	add(host)
	return out
}
