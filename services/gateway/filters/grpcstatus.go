package filters

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithGRPCStatus answers a gRPC call that a filter rejects (401, 403, 429, 503, 504, ...) as
// a gRPC client understands it: a gRPC status (UNAUTHENTICATED, PERMISSION_DENIED,
// RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, ...) with the kube Status in its details
// and, with a Retry-After, a RetryInfo; not an HTTP error a gRPC client reports as a transport
// failure. The gRPC server's own answers (always 200) pass untouched.
func WithGRPCStatus(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsGRPC(r) {
			next.ServeHTTP(w, r)
			return
		}
		gw := &grpcStatusWriter{w: w}
		next.ServeHTTP(gw, r)
		gw.finish()
	})
}

// grpcStatusWriter passes a 200 answer through and keeps any other to turn it into a status.
type grpcStatusWriter struct {
	w        http.ResponseWriter
	code     int // 0 until the head is written
	rejected bytes.Buffer
}

func (g *grpcStatusWriter) Header() http.Header { return g.w.Header() }

func (g *grpcStatusWriter) WriteHeader(code int) {
	if g.code != 0 {
		return
	}
	g.code = code
	if code == http.StatusOK {
		g.w.WriteHeader(code)
	}
}

func (g *grpcStatusWriter) Write(p []byte) (int, error) {
	g.WriteHeader(http.StatusOK)
	if g.code != http.StatusOK {
		return g.rejected.Write(p)
	}
	return g.w.Write(p)
}

func (g *grpcStatusWriter) Flush() {
	if g.code == http.StatusOK {
		_ = http.NewResponseController(g.w).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (the gRPC server flushes through it).
func (g *grpcStatusWriter) Unwrap() http.ResponseWriter { return g.w }

// finish writes a rejection as a trailers-only gRPC answer.
func (g *grpcStatusWriter) finish() {
	if g.code == 0 || g.code == http.StatusOK {
		return
	}
	var st metav1.Status
	if json.Unmarshal(g.rejected.Bytes(), &st) != nil || st.Code == 0 {
		st = *rpcstatus.NewStatus(g.code, metav1.StatusReasonUnknown, strings.TrimSpace(g.rejected.String()))
	}
	s := status.Convert(rpcstatus.FromKube(&st))
	h := g.w.Header()
	if secs, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		if withRetry, err := s.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)}); err == nil {
			s = withRetry
		}
	}
	for _, name := range []string{"Content-Length", "Content-Type", "X-Content-Type-Options", "Retry-After"} {
		h.Del(name)
	}
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(int(s.Code())))
	h.Set("Grpc-Message", encodeGRPCMessage(s.Message()))
	if details, err := proto.Marshal(s.Proto()); err == nil {
		h.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(details))
	}
	g.w.WriteHeader(http.StatusOK) // trailers-only: the status is in the head, with no body
}

// encodeGRPCMessage is the grpc-message header's percent-encoding: bytes outside printable
// ASCII, and '%', as %XX.
func encodeGRPCMessage(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c >= ' ' && c <= '~' && c != '%' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
