// Package proxy maps kube's REST requests onto the backends' ResourceService, and serves
// the same service to the gateway's gRPC clients: it routes each call down the chain,
// streams watches, carries the backends' warnings, and writes their answers and errors in
// kube's wire format.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/apichain/apichain/services/gateway/apf"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/gzipbody"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/services/gateway/filters"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxRequestBodyBytes is kube's limit on request bodies (3 MiB).
const MaxRequestBodyBytes = 3 << 20

// IsAPIPath reports whether p is under kube's API roots, where errors are kube Status.
func IsAPIPath(p string) bool {
	return p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/") ||
		p == "/openapi/v2" || strings.HasPrefix(p, "/openapi/")
}

// NotFound is kube's answer for a path nothing serves: a Status under /api and /apis, plain
// text elsewhere.
func NotFound(w http.ResponseWriter, r *http.Request) {
	if IsAPIPath(r.URL.Path) {
		filters.WriteStatus(w, routing.ChainStatus(routing.ErrEndOfChain))
		return
	}
	http.NotFound(w, r)
}

// WriteError writes the kube Status for an error from the chain: the backend's
// own encoding when it sent one, as it is; otherwise one made here.
func WriteError(w http.ResponseWriter, err error) {
	st := routing.ChainStatus(err)
	code, data, fromBackend := rpcstatus.KubeJSON(err)
	if st == nil && !fromBackend {
		st = rpcstatus.ToKube(err)
	}
	if st != nil {
		code = int(st.Code)
	}
	// As kube's responsewriters do, a Status that says when to retry says it in Retry-After
	// too (client-go retries on it, writes included).
	retryAfter := retryAfterSeconds(st, data)
	if retryAfter == 0 && (code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests) {
		retryAfter = 1
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter)))
	}
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	filters.WriteStatusJSON(w, code, data)
}

// WriteBody writes a backend's answer.
func WriteBody(w http.ResponseWriter, code int, b *resourcev1.Body) {
	if code == 0 {
		code = http.StatusOK
	}
	w.Header().Set("Content-Type", b.GetContentType())
	w.WriteHeader(code)
	_, _ = w.Write(b.GetData())
}

func readBody(w http.ResponseWriter, r *http.Request) (*resourcev1.Body, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			filters.WriteError(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("Request entity too large: limit is %d", MaxRequestBodyBytes))
			return nil, false
		}
		filters.WriteError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "unable to read request body: "+err.Error())
		return nil, false
	}
	return &resourcev1.Body{ContentType: r.Header.Get("Content-Type"), Data: data}, true
}

func listOptions(r *http.Request) *resourcev1.ListOptions {
	q := r.URL.Query()
	return &resourcev1.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"),
		ResourceVersion: q.Get("resourceVersion"), ResourceVersionMatch: q.Get("resourceVersionMatch")}
}

func writeOptions(r *http.Request) *resourcev1.WriteOptions {
	q := r.URL.Query()
	return &resourcev1.WriteOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
}

func deleteOptions(r *http.Request) *resourcev1.DeleteOptions {
	q := r.URL.Query()
	grace := int64(-1)
	if s := q.Get("gracePeriodSeconds"); s != "" {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			grace = v
		}
	}
	return &resourcev1.DeleteOptions{DryRun: q["dryRun"], GracePeriodSeconds: grace, PropagationPolicy: q.Get("propagationPolicy")}
}

// REST serves kube's resource requests by delegating them down the chain.
type REST struct {
	rt    *routing.Router
	modes []string
	hub   *WatchHub
}

// NewREST delegates through rt, sharing backend watches in hub; modes are the gateway's
// authorization modes, which travel with each caller.
func NewREST(rt *routing.Router, modes []string, hub *WatchHub) *REST {
	return &REST{rt: rt, modes: modes, hub: hub}
}

// ServeResource maps a kube resource request onto the ResourceService, with the caller the
// filters identified.
func (p *REST) ServeResource(w http.ResponseWriter, r *http.Request, info *requestinfo.RequestInfo) {
	ctx := outgoing(r.Context(), p.modes)
	ref := &resourcev1.ResourceRef{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource,
		Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
	q := r.URL.Query()
	enc := &resourcev1.Encoding{Accept: r.Header.Get("Accept"), Pretty: filters.PrettyPrint(r)}
	gv := discovery.GroupVersion(info.APIGroup, info.APIVersion)
	client := func(conn grpc.ClientConnInterface) resourcev1.ResourceServiceClient {
		return resourcev1.NewResourceServiceClient(conn)
	}
	var body *resourcev1.Body
	switch info.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		var ok bool
		if body, ok = readBody(w, r); !ok {
			return
		}
	}
	var (
		out  *resourcev1.Body
		code int32
		err  error
	)
	ctx, warns := withWarnings(ctx)
	switch info.Verb {
	case "get":
		var resp *resourcev1.GetResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
			return client(c).Get(ctx, &resourcev1.GetRequest{Ref: ref, Encoding: enc, ResourceVersion: q.Get("resourceVersion")})
		})
		out = resp.GetBody()
	case "list":
		limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
		req := &resourcev1.StreamListRequest{
			List:       &resourcev1.ListRequest{Ref: ref, Encoding: enc, Options: listOptions(r), PageSize: limit, PageToken: q.Get("continue")},
			AcceptGzip: gzipbody.Accepts(r.Header.Get("Accept-Encoding")),
		}
		var list *listStream
		list, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*listStream, error) {
			return openList(ctx, c, req)
		})
		if err == nil {
			warns.writeHTTP(w.Header())
			writeList(w, r, list)
			return
		}
	case "watch":
		p.serveWatch(ctx, w, r, ref, enc, gv)
		return
	case "create":
		var resp *resourcev1.CreateResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.CreateResponse, error) {
			return client(c).Create(ctx, &resourcev1.CreateRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
		if code == 0 {
			code = http.StatusCreated
		}
	case "update":
		var resp *resourcev1.UpdateResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.UpdateResponse, error) {
			return client(c).Update(ctx, &resourcev1.UpdateRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "patch":
		force := q.Get("force") == "true"
		var resp *resourcev1.PatchResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.PatchResponse, error) {
			return client(c).Patch(ctx, &resourcev1.PatchRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r), Force: force})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "delete":
		var resp *resourcev1.DeleteResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteResponse, error) {
			return client(c).Delete(ctx, &resourcev1.DeleteRequest{Ref: ref, Encoding: enc, Body: body, Options: deleteOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "deletecollection":
		var resp *resourcev1.DeleteCollectionResponse
		resp, err = routing.Invoke(ctx, p.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteCollectionResponse, error) {
			return client(c).DeleteCollection(ctx, &resourcev1.DeleteCollectionRequest{Ref: ref, Encoding: enc, Body: body,
				Options: deleteOptions(r), ListOptions: listOptions(r)})
		})
		out = resp.GetBody()
	default:
		filters.WriteError(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("the server does not allow this method on the requested resource (%s %s)", r.Method, r.URL.Path))
		return
	}
	warns.writeHTTP(w.Header())
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteBody(w, int(code), out)
}

// serveWatch streams watch events as kube's newline-delimited JSON events. The backend's
// first message has an empty type: the watch is established, so headers go out at once.
func (p *REST) serveWatch(ctx context.Context, w http.ResponseWriter, r *http.Request, ref *resourcev1.ResourceRef, enc *resourcev1.Encoding, gv string) {
	q := r.URL.Query()
	timeout, _ := strconv.ParseInt(q.Get("timeoutSeconds"), 10, 64)
	req := &resourcev1.WatchRequest{Ref: ref, Encoding: enc, Options: listOptions(r), TimeoutSeconds: timeout,
		AllowWatchBookmarks: q.Get("allowWatchBookmarks") == "true", SendInitialEvents: q.Get("sendInitialEvents") == "true"}
	stream, err := p.hub.Watch(ctx, gv, req)
	if err != nil {
		WriteError(w, err)
		return
	}
	first, err := stream.Recv()
	if err != nil {
		WriteError(w, err)
		return
	}
	frame := watchFramer(first.GetObject().GetContentType())
	(&warnings{list: stream.Warnings()}).writeHTTP(w.Header())
	w.Header().Set("Content-Type", frame.contentType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	apf.WatchInitialized(ctx) // established: priority and fairness frees its seat
	count := watchEvents.WithContext(ctx).WithLabelValues(ref.GetGroup(), ref.GetVersion(), ref.GetResource())
	size := watchEventsSizes.WithContext(ctx).WithLabelValues(ref.GetGroup(), ref.GetVersion(), ref.GetResource())
	for ev := first; ; {
		if ev.GetType() != "" {
			data, err := frame.encode(ev)
			if err != nil {
				return
			}
			if _, err := w.Write(data); err != nil {
				return
			}
			count.Inc()
			size.Observe(float64(len(data)))
		}
		if flusher != nil {
			flusher.Flush()
		}
		if ev, err = stream.Recv(); err != nil {
			return
		}
	}
}

// retryAfterSeconds is the Status's details.retryAfterSeconds, from st or else from its JSON.
func retryAfterSeconds(st *metav1.Status, data []byte) int32 {
	if st == nil {
		st = &metav1.Status{}
		if json.Unmarshal(data, st) != nil {
			return 0
		}
	}
	if st.Details == nil {
		return 0
	}
	return st.Details.RetryAfterSeconds
}
