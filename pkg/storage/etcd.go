// Package storage holds apichain's etcd access.
package storage

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/healthz"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// NewClient connects to etcd, over TLS when tlsCfg is given (https endpoints). The client
// dials lazily, so a process can start before etcd. Keepalives find a member that vanished
// without closing its connections (SIGKILLed, its host gone) within seconds, so the calls on
// them fail and are tried on another member. dial adds gRPC dial options (tracing's).
func NewClient(endpoints []string, tlsCfg *tls.Config, dial ...grpc.DialOption) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tlsCfg,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: 5 * time.Second,
		DialOptions:          dial,
		Logger:               zap.NewNop(),
	})
}

// keepAliveTime is the least interval grpc-go pings at (kube-apiserver pings every 30 s).
const keepAliveTime = 10 * time.Second

// Members are the endpoints to ask each member's status at: c's endpoints, or one with no
// address for a client of an etcd in the process (embedded.Etcd.Client), whose every call
// goes to that member.
func Members(c *clientv3.Client) []string {
	if eps := c.Endpoints(); len(eps) > 0 {
		return eps
	}
	return []string{""}
}

// Ping asks every endpoint for its status, like kube's etcd health check.
func Ping(ctx context.Context, c *clientv3.Client) error {
	var lastErr error
	for _, ep := range Members(c) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Status(sctx, ep)
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
	}
	return fmt.Errorf("etcd unreachable: %w", lastErr)
}

// HealthCheck is the "etcd" health check. Its note is the last round trip it measured
// ("round trip 1.2ms"), which each backend publishes with its state, so `apichain diagnose`
// reads etcd's latency from every backend.
func HealthCheck(c *clientv3.Client) healthz.Checker { return &etcdCheck{c: c} }

type etcdCheck struct {
	c   *clientv3.Client
	rtt atomic.Int64 // of the last successful ping, in ns
}

func (*etcdCheck) Name() string { return "etcd" }

func (e *etcdCheck) Check(r *http.Request) error {
	start := time.Now()
	if err := Ping(r.Context(), e.c); err != nil {
		return err
	}
	e.rtt.Store(int64(time.Since(start)))
	return nil
}

func (e *etcdCheck) Note() string {
	rtt := time.Duration(e.rtt.Load())
	if rtt == 0 {
		return ""
	}
	return "round trip " + rtt.Round(10*time.Microsecond).String()
}

// WaitReady blocks until etcd answers or ctx is done; it is the storage-readiness hook.
func WaitReady(ctx context.Context, c *clientv3.Client) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if err := Ping(ctx, c); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
