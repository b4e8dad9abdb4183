// Package apichaintest runs a real apichain API server inside a Go test: the all-in-one
// (gateway, aggregator, core and extensions, over gRPC and mutual TLS, with an embedded etcd
// and NATS) on free loopback ports, in the test's own process, with nothing to download.
// Start returns once /readyz passes, with a *rest.Config of the cluster's admin
// (system:masters), for client-go, controller-runtime or kubectl (Server.KubeconfigPath).
//
//	func TestMain(m *testing.M) {
//		srv, err := apichaintest.Start(context.Background(), apichaintest.Options{})
//		if err != nil {
//			log.Fatal(err)
//		}
//		code := m.Run()
//		_ = srv.Stop()
//		os.Exit(code)
//	}
//
// Servers are independent: a process may run several at once, each with its own data
// directory, ports, etcd and NATS.
package apichaintest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/apichain/apichain/cmd/apichain/allinone"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options configure a test server; the zero value is a fresh server with the all-in-one's
// defaults.
type Options struct {
	// DataDir holds the server's certificates, admin kubeconfig and etcd data. Empty: a new
	// temporary directory, removed by Stop. A directory of an earlier server starts that
	// cluster again, with its objects.
	DataDir string
	// Args are more flags of the all-in-one (see apichain --help), for example
	// "--authorization-mode=RBAC" or "--service-cluster-ip-range=10.96.0.0/16".
	Args []string
	// LogLevel is the level of the server's log on stderr (default "error"). As in the apichain
	// command, that log also becomes slog's default and klog's.
	LogLevel string
	// ReadyTimeout bounds the wait for /readyz (default one minute).
	ReadyTimeout time.Duration
	// Envtest runs the server as controller-runtime's envtest runs kube-apiserver: no
	// ServiceAccount admission, privileged containers allowed, and none of the controllers
	// kube-controller-manager would run (no default ServiceAccount or kube-root-ca.crt in new
	// namespaces, no garbage collection, namespaces stay Terminating).
	Envtest bool
}

// EnvtestArgs are the all-in-one's flags of the envtest profile (Options.Envtest).
var EnvtestArgs = []string{"--disable-admission-plugins=ServiceAccount", "--allow-privileged", "--controllers="}

// Server is a running test server.
type Server struct {
	// Config is the admin's client configuration (a client certificate of system:masters).
	Config *rest.Config
	// URL is the gateway's https URL.
	URL string
	// KubeconfigPath is the admin kubeconfig, for kubectl --kubeconfig.
	KubeconfigPath string
	// DataDir is the server's data directory.
	DataDir string

	stop    context.CancelFunc
	done    chan error
	tempDir bool
}

type serving struct{ url, kubeconfig string }

// Start starts a server and returns once its /readyz passes, or with the error that stopped
// it. ctx bounds only the start; Stop stops the server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	s := &Server{DataDir: opts.DataDir, done: make(chan error, 1)}
	if s.DataDir == "" {
		dir, err := os.MkdirTemp("", "apichaintest-")
		if err != nil {
			return nil, err
		}
		s.DataDir, s.tempDir = dir, true
	}
	level := opts.LogLevel
	if level == "" {
		level = "error"
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	started := make(chan serving, 1)
	cmd := allinone.NewCommand(func(url, kubeconfig string) { started <- serving{url, kubeconfig} })
	args := []string{"--data-dir", s.DataDir, "--secure-port", "0", "--log-level", level}
	if opts.Envtest {
		args = append(args, EnvtestArgs...)
	}
	cmd.SetArgs(append(args, opts.Args...))
	cmd.SilenceErrors = true
	runCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go func() { s.done <- cmd.ExecuteContext(runCtx) }()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.waitReady(ctx, started); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits for the gateway to serve, then polls /readyz until it passes.
func (s *Server) waitReady(ctx context.Context, started <-chan serving) error {
	select {
	case sv := <-started:
		s.URL, s.KubeconfigPath = sv.url, sv.kubeconfig
	case err := <-s.done:
		s.done <- err // for Stop
		return fmt.Errorf("apichain stopped before serving: %w", orStopped(err))
	case <-ctx.Done():
		return fmt.Errorf("apichain did not serve: %w", ctx.Err())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		return err
	}
	s.Config = cfg
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("apichain stopped before it was ready: %w", orStopped(err))
		case <-ctx.Done():
			return fmt.Errorf("apichain was not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func orStopped(err error) error {
	if err == nil {
		return errors.New("stopped")
	}
	return err
}

// Stop shuts the server down gracefully, waits for it and removes its temporary data
// directory; it returns the error the server stopped with, if any.
func (s *Server) Stop() error {
	s.stop()
	err := <-s.done
	s.done <- err // Stop may be called again
	if s.tempDir {
		if rmErr := os.RemoveAll(s.DataDir); rmErr != nil && err == nil {
			err = rmErr
		}
	}
	return err
}
