package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/gzipbody"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// oldBackend serves List only, as a backend from before StreamList.
type oldBackend struct {
	resourcev1.UnimplementedResourceServiceServer
}

func (oldBackend) List(context.Context, *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return &resourcev1.ListResponse{Body: &resourcev1.Body{ContentType: "application/json", Data: []byte(`{"items":[]}`)}, NextPageToken: "next"}, nil
}

// piecesBackend sends its pieces, then fails with err (if any); notServed refuses the list.
// With encoding, the first piece names it (the pieces are then compressed bytes); acceptGzip
// is what the last request asked.
type piecesBackend struct {
	resourcev1.UnimplementedResourceServiceServer
	pieces     []string
	err        error
	notServed  bool
	encoding   string
	acceptGzip bool
}

func (b *piecesBackend) StreamList(req *resourcev1.StreamListRequest, s grpc.ServerStreamingServer[resourcev1.StreamListResponse]) error {
	if b.notServed {
		return rpcstatus.NotServed("v1/configmaps")
	}
	b.acceptGzip = req.GetAcceptGzip()
	for i, p := range b.pieces {
		msg := &resourcev1.StreamListResponse{Body: &resourcev1.Body{Data: []byte(p)}}
		if i == 0 {
			msg.Body.ContentType, msg.ContentEncoding = "application/json", b.encoding
		}
		if err := s.Send(msg); err != nil {
			return err
		}
	}
	return b.err
}

func serve(t *testing.T, rs resourcev1.ResourceServiceServer) grpc.ClientConnInterface {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	resourcev1.RegisterResourceServiceServer(srv, rs)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// written is what writeList answers, and whether it aborted the response.
func written(t *testing.T, l *listStream) (rec *httptest.ResponseRecorder, aborted bool) {
	return writtenFor(t, l, "")
}

// writtenFor is written for a client whose Accept-Encoding is acceptEncoding.
func writtenFor(t *testing.T, l *listStream, acceptEncoding string) (rec *httptest.ResponseRecorder, aborted bool) {
	rec = httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			err, ok := p.(error)
			require.True(t, ok && errors.Is(err, http.ErrAbortHandler), "panicked with %v", p)
			aborted = true
		}
	}()
	r := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
	if acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", acceptEncoding)
	}
	writeList(rec, r, l)
	return rec, false
}

func TestListInPieces(t *testing.T) {
	ctx := context.Background()
	req := &resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps"}}}

	l, err := openList(ctx, serve(t, &piecesBackend{pieces: []string{`{"items":[`, `1,`, `2]}`}}), req)
	require.NoError(t, err)
	rec, aborted := written(t, l)
	assert.False(t, aborted)
	assert.Equal(t, `{"items":[1,2]}`, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))

	// A backend from before StreamList is asked List.
	l, err = openList(ctx, serve(t, oldBackend{}), req)
	require.NoError(t, err)
	assert.Equal(t, "next", l.first.GetNextPageToken())
	rec, aborted = written(t, l)
	assert.False(t, aborted)
	assert.Equal(t, `{"items":[]}`, rec.Body.String())

	// Not served: the chain moves on, nothing is asked twice.
	_, err = openList(ctx, serve(t, &piecesBackend{notServed: true}), req)
	assert.True(t, rpcstatus.IsNotServed(err), "%v", err)

	// A failure before the first piece is the request's error; after it, the answer is cut off.
	_, err = openList(ctx, serve(t, &piecesBackend{err: status.Error(codes.Unavailable, "gone")}), req)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	l, err = openList(ctx, serve(t, &piecesBackend{pieces: []string{`{"items":[`, `1,`}, err: status.Error(codes.Internal, "died")}), req)
	require.NoError(t, err)
	rec, aborted = written(t, l)
	assert.True(t, aborted, "a list cut short is not a shorter list")
	assert.Equal(t, `{"items":[1,`, rec.Body.String())
}

// A list larger than kube's threshold is compressed for a client that accepts gzip, as kube
// compresses it; a smaller one, or for a client that does not, is not.
func TestListCompressed(t *testing.T) {
	ctx := context.Background()
	req := &resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps"}}}
	big := `{"items":[` + strings.Repeat(`"x",`, gzipbody.Threshold/4) + `"y"]}`
	for _, c := range []struct {
		body, acceptEncoding string
		compressed           bool
	}{
		{big, "gzip", true},
		{big, "deflate, gzip", true},
		{big, "gzip;q=1", false}, // kube reads tokens only
		{big, "", false},
		{`{"items":[]}`, "gzip", false},
	} {
		backend := &piecesBackend{pieces: []string{c.body[:len(c.body)-10], c.body[len(c.body)-10:]}}
		l, err := openList(ctx, serve(t, backend), req)
		require.NoError(t, err)
		rec, aborted := writtenFor(t, l, c.acceptEncoding)
		require.False(t, aborted)
		got := rec.Body.Bytes()
		if c.compressed {
			assert.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
			assert.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"))
			assert.Less(t, len(got), len(c.body)/10)
			zr, err := gzip.NewReader(bytes.NewReader(got))
			require.NoError(t, err)
			got, err = io.ReadAll(zr)
			require.NoError(t, err)
		} else {
			assert.Empty(t, rec.Header().Get("Content-Encoding"), c.acceptEncoding)
		}
		assert.Equal(t, c.body, string(got), "Accept-Encoding %q", c.acceptEncoding)
	}

	// A backend that compressed the list itself (it was asked to): its bytes go out as they
	// came, named gzip, and are not compressed again.
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = io.WriteString(zw, big)
	require.NoError(t, zw.Close())
	z := zipped.String()
	backend := &piecesBackend{pieces: []string{z[:len(z)/2], z[len(z)/2:]}, encoding: "gzip"}
	gzReq := &resourcev1.StreamListRequest{List: req.GetList(), AcceptGzip: true}
	l, err := openList(ctx, serve(t, backend), gzReq)
	require.NoError(t, err)
	assert.True(t, backend.acceptGzip, "the request's accept_gzip reaches the backend")
	rec, aborted := writtenFor(t, l, "gzip")
	require.False(t, aborted)
	assert.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"))
	assert.Equal(t, z, rec.Body.String())
}
