package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/gzipbody"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// listStream is a list's body as a backend sends it, in pieces (StreamList); the first piece
// has been read, to learn whether the backend serves the list, or its error.
type listStream struct {
	first *resourcev1.StreamListResponse
	rest  grpc.ServerStreamingClient[resourcev1.StreamListResponse] // nil: the body came whole
}

// openList asks c for a list in pieces, or whole (List) if c is from before StreamList.
func openList(ctx context.Context, c grpc.ClientConnInterface, req *resourcev1.StreamListRequest) (*listStream, error) {
	rc := resourcev1.NewResourceServiceClient(c)
	s, err := rc.StreamList(ctx, req)
	if err == nil {
		var first *resourcev1.StreamListResponse
		if first, err = s.Recv(); err == nil {
			md, _ := s.Header() // there with the first message
			collect(ctx, md)
			return &listStream{first: first, rest: s}, nil
		}
	}
	if status.Code(err) != codes.Unimplemented || rpcstatus.IsNotServed(err) {
		return nil, err
	}
	resp, err := rc.List(ctx, req.GetList())
	if err != nil {
		return nil, err
	}
	return &listStream{first: &resourcev1.StreamListResponse{Body: resp.GetBody(), NextPageToken: resp.GetNextPageToken()}}, nil
}

// next is the body's next piece, io.EOF after the last.
func (l *listStream) next() (*resourcev1.StreamListResponse, error) {
	if f := l.first; f != nil {
		l.first = nil
		return f, nil
	}
	if l.rest == nil {
		return nil, io.EOF
	}
	return l.rest.Recv()
}

// writeList writes the list's body as it comes, compressed as kube compresses a large answer
// for a client that accepts gzip (client-go's transport asks for it): by the backend, which
// spares the hop the plain bytes, or here if the backend sent them plain (one from before
// StreamListRequest.accept_gzip). A backend failing after the answer began cannot turn it
// into a Status any more: the response is cut off (the connection closed, or the HTTP/2
// stream reset), so the client sees a failed request, not a shorter list.
func writeList(w http.ResponseWriter, r *http.Request, l *listStream) {
	piece, _ := l.next()
	h := w.Header()
	h.Set("Content-Type", piece.GetBody().GetContentType())
	var out io.Writer = w
	compressed := piece.GetContentEncoding() == "gzip"
	if !compressed && len(piece.GetBody().GetData()) > gzipbody.Threshold && gzipbody.Accepts(r.Header.Get("Accept-Encoding")) {
		gz := gzipbody.NewWriter(w)
		defer gz.Close()
		out, compressed = gz, true
	}
	if compressed {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := out.Write(piece.GetBody().GetData()); err != nil {
			return // the client went away
		}
		var err error
		if piece, err = l.next(); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			panic(http.ErrAbortHandler)
		}
	}
}
