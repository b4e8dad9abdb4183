package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GRPC is apichain.discovery.v1.DiscoveryService on the gateway, for the whole chain: a
// document is what a GET of its path (with that Accept and query) answers over REST, merged
// as there; the Warning headers of /api and /apis come as "warning" response metadata, and an
// error as a gRPC status with the kube Status in its details.
type GRPC struct {
	discoveryv1.UnimplementedDiscoveryServiceServer
	docs *Documents
}

// NewGRPC answers from docs.
func NewGRPC(docs *Documents) *GRPC { return &GRPC{docs: docs} }

// GetDocument implements the service.
func (g *GRPC) GetDocument(ctx context.Context, req *discoveryv1.GetDocumentRequest) (*httpbody.HttpBody, error) {
	p := req.GetPath()
	if p != "/api" && p != "/apis" && !strings.HasPrefix(p, "/api/") && !strings.HasPrefix(p, "/apis/") && !strings.HasPrefix(p, "/openapi/") {
		return nil, status.Errorf(codes.InvalidArgument, "path %q is not a discovery or OpenAPI document (/api, /apis, /openapi/...)", p)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Path: p, RawQuery: req.GetQuery()}).String(), nil)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	r.Header.Set("Accept", req.GetAccept())
	w := &recorder{header: http.Header{}}
	g.docs.Serve(w, r)
	if ws := w.header.Values("Warning"); len(ws) > 0 {
		_ = grpc.SetHeader(ctx, metadata.MD{"warning": ws})
	}
	if w.code != 0 && w.code != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(w.body.Bytes(), &st) != nil || st.Kind != "Status" {
			st = metav1.Status{Status: metav1.StatusFailure, Code: int32(w.code), Message: strings.TrimSpace(w.body.String())}
		}
		return nil, rpcstatus.FromKube(&st)
	}
	return &httpbody.HttpBody{ContentType: w.header.Get("Content-Type"), Data: w.body.Bytes()}, nil
}

// recorder keeps what Documents.Serve writes.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
