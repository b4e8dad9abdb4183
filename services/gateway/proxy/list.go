package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/klauspost/compress/gzip"
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
func openList(ctx context.Context, c grpc.ClientConnInterface, req *resourcev1.ListRequest) (*listStream, error) {
	rc := resourcev1.NewResourceServiceClient(c)
	s, err := rc.StreamList(ctx, &resourcev1.StreamListRequest{List: req})
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
	resp, err := rc.List(ctx, req)
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
// for a client that accepts gzip (client-go's transport asks for it). A backend failing after
// the answer began cannot turn it into a Status any more: the response is cut off (the
// connection closed, or the HTTP/2 stream reset), so the client sees a failed request, not a
// shorter list.
func writeList(w http.ResponseWriter, r *http.Request, l *listStream) {
	piece, _ := l.next()
	h := w.Header()
	h.Set("Content-Type", piece.GetBody().GetContentType())
	var out io.Writer = w
	if len(piece.GetBody().GetData()) > gzipThreshold && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			if gz.Close() == nil {
				gzipWriters.Put(gz)
			}
		}()
		out = gz
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

// gzipThreshold is kube's: an answer whose first write is larger is compressed, at kube's
// level 1 (its APIResponseCompression, on by default).
const gzipThreshold = 128 << 10

var gzipWriters = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// acceptsGzip reports whether the request's Accept-Encoding has the token gzip, as kube reads
// it (a token with parameters, gzip;q=1, is not it).
func acceptsGzip(r *http.Request) bool {
	for token := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}
