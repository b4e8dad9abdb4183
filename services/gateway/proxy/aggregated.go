package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"

	proxyv1 "github.com/apichain/apichain/gen/apichain/proxy/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/routing"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/httpstream"
)

// Aggregated hands the requests of remote APIServices to the aggregator as HTTP exchanges,
// after the filter chain authenticated, authorized and audited them: the aggregator forwards
// them to the aggregated API server with the caller in front-proxy headers.
type Aggregated struct {
	rt    *routing.Router
	modes []string
}

// NewAggregated forwards through rt.
func NewAggregated(rt *routing.Router, modes []string) *Aggregated {
	return &Aggregated{rt: rt, modes: modes}
}

// exchangeChunk is the size of the body chunks sent to the aggregator.
const exchangeChunk = 32 << 10

// hopByHop are the headers that concern one connection, not the request (an upgrade keeps
// Connection and Upgrade: they are what it asks for).
var hopByHop = []string{"Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding"}

// Serve forwards r, a request to group/version, and writes the server's answer.
func (a *Aggregated) Serve(w http.ResponseWriter, r *http.Request, group, version string) {
	upgrade := httpstream.IsUpgradeRequest(r)
	var body []byte
	if !upgrade {
		b, ok := readBody(w, r)
		if !ok {
			return
		}
		body = b.GetData()
	}
	head := &proxyv1.RequestHead{Method: r.Method, RequestUri: r.URL.RequestURI(), Group: group, Version: version}
	for name, values := range r.Header {
		if !isHopByHop(name) || (upgrade && (name == "Connection" || name == "Upgrade")) {
			head.Headers = append(head.Headers, &proxyv1.Header{Name: name, Values: values})
		}
	}
	type opened struct {
		stream grpc.BidiStreamingClient[proxyv1.ExchangeRequest, proxyv1.ExchangeResponse]
		first  *proxyv1.ResponseHead
	}
	ctx, cancel := context.WithCancel(outgoing(r.Context(), a.modes))
	defer cancel()
	o, err := routing.Invoke(ctx, a.rt, discovery.GroupVersion(group, version), func(ctx context.Context, c grpc.ClientConnInterface) (opened, error) {
		s, err := proxyv1.NewProxyServiceClient(c).Exchange(ctx)
		if err != nil {
			return opened{}, err
		}
		if err := s.Send(&proxyv1.ExchangeRequest{Part: &proxyv1.ExchangeRequest_Head{Head: head}}); err != nil {
			return opened{}, recvError(s, err)
		}
		for rest := body; len(rest) > 0; {
			n := min(len(rest), exchangeChunk)
			if err := s.Send(&proxyv1.ExchangeRequest{Part: &proxyv1.ExchangeRequest_Data{Data: rest[:n]}}); err != nil {
				return opened{}, recvError(s, err)
			}
			rest = rest[n:]
		}
		if !upgrade {
			if err := s.CloseSend(); err != nil {
				return opened{}, err
			}
		}
		m, err := s.Recv()
		if err != nil {
			return opened{}, err
		}
		if m.GetHead() == nil {
			return opened{}, errors.New("the aggregator's answer did not start with its head")
		}
		return opened{stream: s, first: m.GetHead()}, nil
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	if o.first.GetRaw() {
		a.serveRaw(w, o.stream)
		return
	}
	for _, h := range o.first.GetHeaders() {
		w.Header()[http.CanonicalHeaderKey(h.GetName())] = h.GetValues()
	}
	w.WriteHeader(int(o.first.GetStatus()))
	// The head goes out now: a watch that has no event yet is still answered.
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		m, err := o.stream.Recv()
		if err != nil {
			return // io.EOF: the answer is complete; otherwise it is cut, as a broken connection would cut it
		}
		if _, err := w.Write(m.GetData()); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// serveRaw joins the client's connection to the exchange once the aggregated server took an
// upgrade request: bytes flow both ways until either side ends.
func (a *Aggregated) serveRaw(w http.ResponseWriter, s grpc.BidiStreamingClient[proxyv1.ExchangeRequest, proxyv1.ExchangeResponse]) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = s.CloseSend()
		http.Error(w, "the connection cannot be upgraded: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	go func() {
		buf := make([]byte, exchangeChunk)
		for {
			n, err := brw.Reader.Read(buf)
			if n > 0 {
				if s.Send(&proxyv1.ExchangeRequest{Part: &proxyv1.ExchangeRequest_Data{Data: append([]byte(nil), buf[:n]...)}}) != nil {
					return
				}
			}
			if err != nil {
				_ = s.CloseSend()
				return
			}
		}
	}()
	for {
		m, err := s.Recv()
		if err != nil {
			return
		}
		if _, err := conn.Write(m.GetData()); err != nil {
			return
		}
	}
}

// recvError is the status a failed send hides: gRPC reports it on Recv.
func recvError(s grpc.BidiStreamingClient[proxyv1.ExchangeRequest, proxyv1.ExchangeResponse], sendErr error) error {
	if !errors.Is(sendErr, io.EOF) {
		return sendErr
	}
	_, err := s.Recv()
	if err == nil {
		return sendErr
	}
	return err
}

func isHopByHop(name string) bool {
	name = http.CanonicalHeaderKey(name)
	if name == "Connection" || name == "Upgrade" {
		return true
	}
	for _, h := range hopByHop {
		if h == name {
			return true
		}
	}
	return false
}
