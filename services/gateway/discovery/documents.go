// Package discovery serves the discovery and OpenAPI documents behind the gateway: each
// group/version's from the service that owns it, and /apis and the /openapi/v3 index merged
// from every service in chain order, as kube's aggregator merges them.
package discovery

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	apidiscovery "github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/openapi"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/proxy"
	"google.golang.org/grpc"
)

// Documents serves discovery and OpenAPI documents through the chain.
type Documents struct {
	rt *routing.Router
	v2 atomic.Pointer[mergedV2]
}

// NewDocuments asks the backends through rt.
func NewDocuments(rt *routing.Router) *Documents { return &Documents{rt: rt} }

// Serve serves a discovery or OpenAPI document. /apis merges every service's groups in chain
// order; anything else is answered by the first delegate that serves it.
func (d *Documents) Serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req := &discoveryv1.GetDocumentRequest{Path: r.URL.Path, Accept: r.Header.Get("Accept"), Query: r.URL.RawQuery}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/apis":
		d.serveGroupList(ctx, w, r, req)
		return
	case "/openapi/v3":
		d.serveOpenAPIIndex(ctx, w, req)
		return
	case "/openapi/v2":
		d.serveOpenAPIV2(ctx, w, req)
		return
	}
	gv := documentGroupVersion(r.URL.Path)
	doc, err := routing.Invoke(ctx, d.rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.Body, error) {
		hb, err := discoveryv1.NewDiscoveryServiceClient(c).GetDocument(ctx, req)
		if err != nil {
			return nil, err
		}
		return &resourcev1.Body{ContentType: hb.GetContentType(), Data: hb.GetData()}, nil
	})
	if err != nil {
		proxy.WriteError(w, err)
		return
	}
	if doc.GetContentType() == apidiscovery.AggregatedDiscoveryContentType && notModified(w, r, doc.GetData()) {
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/openapi/") {
		doc = indentForPeople(r, doc)
	}
	proxy.WriteBody(w, http.StatusOK, doc)
}

// notModified gives aggregated discovery kube's ETag (the quoted uppercase hex SHA-512 of the
// document), Vary and Cache-Control, and answers 304 to a client that has it already.
func notModified(w http.ResponseWriter, r *http.Request, data []byte) bool {
	etag := strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(data)))
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// indentForPeople indents a JSON discovery document for curl, Wget and browsers, as kube
// does (its OpenAPI documents are written as they are).
func indentForPeople(r *http.Request, b *resourcev1.Body) *resourcev1.Body {
	if !filters.PrettyPrint(r) || !strings.HasPrefix(b.GetContentType(), "application/json") {
		return b
	}
	var out bytes.Buffer
	if json.Indent(&out, b.GetData(), "", "  ") != nil {
		return b
	}
	out.WriteByte('\n')
	return &resourcev1.Body{ContentType: b.GetContentType(), Data: out.Bytes()}
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
// aggregated APIGroupDiscoveryList when the client asks for it. The warnings the services send
// with theirs (the aggregator's: the aggregated APIs that do not answer) go with it.
func (d *Documents) serveGroupList(ctx context.Context, w http.ResponseWriter, r *http.Request, req *discoveryv1.GetDocumentRequest) {
	ctx, warns := proxy.WithWarnings(ctx)
	aggregatedDiscovery := apidiscovery.WantsAggregatedDiscovery(req.GetAccept())
	var items []json.RawMessage
	seen := map[string]bool{}
	for _, data := range d.fromEachService(ctx, req) {
		var part struct {
			Groups []json.RawMessage `json:"groups"`
			Items  []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(data, &part) != nil {
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
	d.order(ctx, items)
	var doc any
	contentType := "application/json"
	if aggregatedDiscovery {
		contentType = apidiscovery.AggregatedDiscoveryContentType
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
	warns.WriteHTTP(w.Header())
	if aggregatedDiscovery && notModified(w, r, data) {
		return
	}
	proxy.WriteBody(w, http.StatusOK, indentForPeople(r, &resourcev1.Body{ContentType: contentType, Data: data}))
}

// order sorts the groups as the aggregator says, by its APIServices' priorities as kube does;
// the groups it does not name (none, once it registered every local one) keep chain order
// after the others. Without an answer the chain order stays.
func (d *Documents) order(ctx context.Context, items []json.RawMessage) {
	t, ok := d.rt.AnyInstance(topology.Aggregator)
	if !ok {
		return
	}
	conn, err := d.rt.Conn(t.Addr)
	if err != nil {
		return
	}
	hb, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, &discoveryv1.GetDocumentRequest{Path: "/apis", Query: apidiscovery.GroupOrderQuery})
	var order []string
	if err != nil || json.Unmarshal(hb.GetData(), &order) != nil {
		return
	}
	rank := map[string]int{}
	for i, g := range order {
		rank[g] = i
	}
	position := func(raw json.RawMessage) int {
		var named struct {
			Name     string `json:"name"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &named)
		if i, ok := rank[named.Name+named.Metadata.Name]; ok {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(items, func(a, b json.RawMessage) int { return position(a) - position(b) })
}

// serveOpenAPIIndex merges the /openapi/v3 indexes of every service, so each group/version
// document is fetched from the server that owns it.
func (d *Documents) serveOpenAPIIndex(ctx context.Context, w http.ResponseWriter, req *discoveryv1.GetDocumentRequest) {
	data, err := openapi.MergeV3Index(d.fromEachService(ctx, req))
	if err != nil {
		proxy.WriteError(w, err)
		return
	}
	proxy.WriteBody(w, http.StatusOK, &resourcev1.Body{ContentType: "application/json", Data: data})
}

// mergedV2 is the last merged /openapi/v2, under the hashes of the documents it was made of.
type mergedV2 struct {
	key         string
	json, proto []byte
	protoOnce   sync.Once
	protoErr    error
}

// serveOpenAPIV2 merges every service's swagger 2.0 document (core's kinds, the CRD kind and
// custom resources from extensions). The services' hashes are asked first: the merge is made
// again only when one changed, so a kubectl apply (which reads v2) costs three small calls.
func (d *Documents) serveOpenAPIV2(ctx context.Context, w http.ResponseWriter, req *discoveryv1.GetDocumentRequest) {
	hashReq := &discoveryv1.GetDocumentRequest{Path: "/openapi/v2", Accept: "application/json", Query: "hash"}
	key := string(bytes.Join(d.fromEachService(ctx, hashReq), []byte{0}))
	m := d.v2.Load()
	if m == nil || m.key != key || key == "" {
		docs := d.fromEachService(ctx, &discoveryv1.GetDocumentRequest{Path: "/openapi/v2", Accept: "application/json"})
		if len(docs) == 0 {
			proxy.WriteError(w, routing.ErrChainIncomplete)
			return
		}
		data, err := openapi.MergeV2(docs)
		if err != nil {
			proxy.WriteError(w, err)
			return
		}
		m = &mergedV2{key: key, json: data}
		d.v2.Store(m)
	}
	if strings.Contains(req.GetAccept(), "protobuf") {
		m.protoOnce.Do(func() { m.proto, m.protoErr = openapi.V2Protobuf(m.json) })
		if m.protoErr != nil {
			proxy.WriteError(w, m.protoErr)
			return
		}
		proxy.WriteBody(w, http.StatusOK, &resourcev1.Body{ContentType: openapi.V2ProtobufContentType, Data: m.proto})
		return
	}
	proxy.WriteBody(w, http.StatusOK, &resourcev1.Body{ContentType: "application/json", Data: m.json})
}

// fromEachService asks one ready instance of every service, in chain order, for the
// document; a service without one, or that fails to answer, is left out of the merge.
func (d *Documents) fromEachService(ctx context.Context, req *discoveryv1.GetDocumentRequest) [][]byte {
	var docs [][]byte
	for _, svc := range topology.Chain() {
		t, ok := d.rt.AnyInstance(svc)
		if !ok {
			continue
		}
		conn, err := d.rt.Conn(t.Addr)
		if err != nil {
			continue
		}
		if hb, err := discoveryv1.NewDiscoveryServiceClient(conn).GetDocument(ctx, req); err == nil {
			docs = append(docs, hb.GetData())
		}
	}
	return docs
}
