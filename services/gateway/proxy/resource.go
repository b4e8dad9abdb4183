package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/openapi"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/gateway/filters"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxRequestBodyBytes is kube's limit on request bodies (3 MiB).
const MaxRequestBodyBytes = 3 << 20

// serveDelegated answers what the gateway does not serve itself by asking the chain.
func (g *Gateway) serveDelegated(w http.ResponseWriter, r *http.Request) {
	info, _ := requestinfo.From(r.Context())
	ctx := outgoing(r.Context())
	switch {
	case isReview(info):
		g.serveReview(w, r, info)
	case info != nil && info.IsResourceRequest:
		g.serveResource(ctx, w, r, info)
	case r.Method == http.MethodGet && isAPIPath(r.URL.Path):
		g.serveDocument(ctx, w, r)
	default:
		notFound(w, r)
	}
}

func isAPIPath(p string) bool {
	return p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/") ||
		p == "/openapi/v2" || strings.HasPrefix(p, "/openapi/")
}

// notFound is kube's answer for a path nothing serves: a Status under /api and /apis, plain
// text elsewhere.
func notFound(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		filters.WriteStatus(w, chainStatus(errEndOfChain))
		return
	}
	http.NotFound(w, r)
}

// chainStatus is the kube Status for a request no delegate served: 404 at the end of a
// complete chain, 503 while the chain is still starting; nil for other errors.
func chainStatus(err error) *metav1.Status {
	switch {
	case errors.Is(err, errEndOfChain):
		return rpcstatus.NewStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	case errors.Is(err, errChainIncomplete):
		return rpcstatus.NewStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"the server is currently unable to handle the request: the delegation chain is still starting")
	}
	return nil
}

// writeDelegationError writes the kube Status for an error from the chain: the backend's
// own encoding when it sent one, as it is; otherwise one made here.
func writeDelegationError(w http.ResponseWriter, err error) {
	st := chainStatus(err)
	code, data, fromBackend := rpcstatus.KubeJSON(err)
	if st == nil && !fromBackend {
		st = rpcstatus.ToKube(err)
	}
	if st != nil {
		code = int(st.Code)
	}
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	filters.WriteStatusJSON(w, code, data)
}

func writeBody(w http.ResponseWriter, code int, b *resourcev1.Body) {
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

// serveResource maps a kube resource request onto the ResourceService.
func (g *Gateway) serveResource(ctx context.Context, w http.ResponseWriter, r *http.Request, info *requestinfo.RequestInfo) {
	ref := &resourcev1.ResourceRef{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource,
		Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
	q := r.URL.Query()
	enc := &resourcev1.Encoding{Accept: r.Header.Get("Accept"), Pretty: q.Get("pretty") == "true" || q.Get("pretty") == "1"}
	gv := groupVersion(info.APIGroup, info.APIVersion)
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
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
			return client(c).Get(ctx, &resourcev1.GetRequest{Ref: ref, Encoding: enc, ResourceVersion: q.Get("resourceVersion")})
		})
		out = resp.GetBody()
	case "list":
		limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
		var resp *resourcev1.ListResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.ListResponse, error) {
			return client(c).List(ctx, &resourcev1.ListRequest{Ref: ref, Encoding: enc, Options: listOptions(r), PageSize: limit, PageToken: q.Get("continue")})
		})
		out = resp.GetBody()
	case "watch":
		g.serveWatch(ctx, w, r, ref, enc, gv)
		return
	case "create":
		var resp *resourcev1.CreateResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.CreateResponse, error) {
			return client(c).Create(ctx, &resourcev1.CreateRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
		if code == 0 {
			code = http.StatusCreated
		}
	case "update":
		var resp *resourcev1.UpdateResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.UpdateResponse, error) {
			return client(c).Update(ctx, &resourcev1.UpdateRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "patch":
		force := q.Get("force") == "true"
		var resp *resourcev1.PatchResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.PatchResponse, error) {
			return client(c).Patch(ctx, &resourcev1.PatchRequest{Ref: ref, Encoding: enc, Body: body, Options: writeOptions(r), Force: force})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "delete":
		var resp *resourcev1.DeleteResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteResponse, error) {
			return client(c).Delete(ctx, &resourcev1.DeleteRequest{Ref: ref, Encoding: enc, Body: body, Options: deleteOptions(r)})
		})
		out, code = resp.GetBody(), resp.GetCode()
	case "deletecollection":
		var resp *resourcev1.DeleteCollectionResponse
		resp, err = invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteCollectionResponse, error) {
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
		writeDelegationError(w, err)
		return
	}
	writeBody(w, int(code), out)
}

// serveWatch streams watch events as kube's newline-delimited JSON events. The backend's
// first message has an empty type: the watch is established, so headers go out at once.
func (g *Gateway) serveWatch(ctx context.Context, w http.ResponseWriter, r *http.Request, ref *resourcev1.ResourceRef, enc *resourcev1.Encoding, gv string) {
	q := r.URL.Query()
	timeout, _ := strconv.ParseInt(q.Get("timeoutSeconds"), 10, 64)
	req := &resourcev1.WatchRequest{Ref: ref, Encoding: enc, Options: listOptions(r), TimeoutSeconds: timeout,
		AllowWatchBookmarks: q.Get("allowWatchBookmarks") == "true", SendInitialEvents: q.Get("sendInitialEvents") == "true"}
	type opened struct {
		stream grpc.ServerStreamingClient[resourcev1.WatchResponse]
		first  *resourcev1.WatchResponse
	}
	o, err := invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (opened, error) {
		s, err := resourcev1.NewResourceServiceClient(c).Watch(ctx, req)
		if err != nil {
			return opened{}, err
		}
		first, err := s.Recv()
		if err != nil {
			return opened{}, err
		}
		return opened{stream: s, first: first}, nil
	})
	if err != nil {
		writeDelegationError(w, err)
		return
	}
	frame := watchFramer(o.first.GetObject().GetContentType())
	w.Header().Set("Content-Type", frame.contentType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for ev := o.first; ; {
		if ev.GetType() != "" {
			data, err := frame.encode(ev)
			if err != nil {
				return
			}
			if _, err := w.Write(data); err != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if ev, err = o.stream.Recv(); err != nil {
			return
		}
	}
}

func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// serveDocument serves discovery and OpenAPI documents. /apis merges every service's groups
// in chain order; anything else is answered by the first delegate that serves it.
func (g *Gateway) serveDocument(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	req := &discoveryv1.GetDocumentRequest{Path: r.URL.Path, Accept: r.Header.Get("Accept"), Query: r.URL.RawQuery}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/apis":
		g.serveGroupList(ctx, w, r, req)
		return
	case "/openapi/v3":
		g.serveOpenAPIIndex(ctx, w, req)
		return
	}
	gv := documentGroupVersion(r.URL.Path)
	doc, err := invoke(ctx, g.router, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.Body, error) {
		hb, err := discoveryv1.NewDiscoveryServiceClient(c).GetDocument(ctx, req)
		if err != nil {
			return nil, err
		}
		return &resourcev1.Body{ContentType: hb.GetContentType(), Data: hb.GetData()}, nil
	})
	if err != nil {
		writeDelegationError(w, err)
		return
	}
	writeBody(w, http.StatusOK, doc)
}

// documentGroupVersion is the route key of a discovery path: "v1" for /api/v1, "g/v" for
// /apis/g/v; other paths have none and are asked down the chain.
func documentGroupVersion(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return parts[1]
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1] + "/" + parts[2]
	case len(parts) == 1 && parts[0] == "api":
		return "v1"
	case len(parts) == 4 && parts[0] == "openapi" && parts[1] == "v3" && parts[2] == "api":
		return parts[3]
	case len(parts) == 5 && parts[0] == "openapi" && parts[1] == "v3" && parts[2] == "apis":
		return parts[3] + "/" + parts[4]
	}
	return ""
}

// serveGroupList merges every service's /apis in chain order: the APIGroupList, or the
// aggregated APIGroupDiscoveryList when the client asks for it.
func (g *Gateway) serveGroupList(ctx context.Context, w http.ResponseWriter, r *http.Request, req *discoveryv1.GetDocumentRequest) {
	aggregated := discovery.WantsAggregated(req.GetAccept())
	var items []json.RawMessage
	seen := map[string]bool{}
	for _, svc := range topology.Chain() {
		t, ok := g.router.anyInstance(svc)
		if !ok {
			continue
		}
		conn, err := g.router.pool.get(t.addr)
		if err != nil {
			continue
		}
		hb, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, req)
		if err != nil {
			continue
		}
		var part struct {
			Groups []json.RawMessage `json:"groups"`
			Items  []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(hb.GetData(), &part) != nil {
			continue
		}
		for _, raw := range append(part.Groups, part.Items...) {
			var named struct {
				Name     string `json:"name"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if json.Unmarshal(raw, &named) != nil {
				continue
			}
			name := named.Name + named.Metadata.Name
			if !seen[name] {
				seen[name] = true
				items = append(items, raw)
			}
		}
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	var doc any
	contentType := "application/json"
	if aggregated {
		contentType = discovery.AggregatedContentType
		doc = struct {
			Kind       string            `json:"kind"`
			APIVersion string            `json:"apiVersion"`
			Metadata   struct{}          `json:"metadata"`
			Items      []json.RawMessage `json:"items"`
		}{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2", Items: items}
	} else {
		doc = struct {
			Kind       string            `json:"kind"`
			APIVersion string            `json:"apiVersion"`
			Groups     []json.RawMessage `json:"groups"`
		}{Kind: "APIGroupList", APIVersion: "v1", Groups: items}
	}
	data, _ := json.Marshal(doc)
	w.Header().Set("Vary", "Accept")
	writeBody(w, http.StatusOK, &resourcev1.Body{ContentType: contentType, Data: data})
}

// serveOpenAPIIndex merges the /openapi/v3 indexes of every service, so each group/version
// document is fetched from the server that owns it.
func (g *Gateway) serveOpenAPIIndex(ctx context.Context, w http.ResponseWriter, req *discoveryv1.GetDocumentRequest) {
	var indexes [][]byte
	for _, svc := range topology.Chain() {
		t, ok := g.router.anyInstance(svc)
		if !ok {
			continue
		}
		conn, err := g.router.pool.get(t.addr)
		if err != nil {
			continue
		}
		if hb, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, req); err == nil {
			indexes = append(indexes, hb.GetData())
		}
	}
	data, err := openapi.MergeV3Index(indexes)
	if err != nil {
		writeDelegationError(w, err)
		return
	}
	writeBody(w, http.StatusOK, &resourcev1.Body{ContentType: "application/json", Data: data})
}
