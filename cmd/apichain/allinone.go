package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/apichain/apichain/services/aggregator/aggregator"
	"github.com/apichain/apichain/services/core/core"
	"github.com/apichain/apichain/services/extensions/extensions"
	"github.com/apichain/apichain/services/gateway/gateway"
	"github.com/spf13/cobra"
)

type options struct {
	gateway     *gateway.Options
	etcdServers []string
	logLevel    string
}

func newCommand() *cobra.Command {
	o := &options{gateway: gateway.NewOptions()}
	o.gateway.BindAddress = "127.0.0.1"
	o.gateway.NATSURL = "" // empty: embedded
	cmd := &cobra.Command{
		Use:          "apichain",
		Short:        "apichain all-in-one: gateway, aggregator, core and extensions in one process",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return run(ctx, o)
		},
	}
	fs := cmd.Flags()
	o.gateway.AddFlags(fs)
	for _, name := range []string{"aggregator-address", "core-address", "extensions-address",
		"backend-ca-file", "backend-client-cert-file", "backend-client-key-file", "backend-server-name"} {
		_ = fs.MarkHidden(name)
	}
	fs.StringSliceVar(&o.etcdServers, "etcd-servers", nil, "etcd client URLs (default: an embedded etcd in --data-dir).")
	fs.StringVar(&o.logLevel, "log-level", "info", "Log level: debug, info, warn, error.")
	fs.Lookup("nats-url").Usage = "NATS URL (default: an embedded NATS server in --data-dir)."
	return cmd
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	slog.SetDefault(log) // libraries that log through slog's default share the format and level
	return log, nil
}

func run(ctx context.Context, o *options) error {
	start := time.Now()
	log, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	gw := o.gateway
	if err := gw.Complete(); err != nil {
		return err
	}
	if err := gw.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(gw.DataDir, 0o700); err != nil {
		return err
	}

	etcdServers := o.etcdServers
	if len(etcdServers) == 0 {
		e, err := embedded.StartEtcd(gw.DataDir, 0, 0)
		if err != nil {
			return err
		}
		defer e.Stop()
		etcdServers = e.Endpoints()
		log.Info("embedded etcd started", "endpoints", etcdServers, "dir", gw.DataDir)
	}
	if gw.NATSURL == "" {
		n, err := embedded.StartNATS(gw.DataDir, "127.0.0.1", 0)
		if err != nil {
			return err
		}
		defer n.Stop()
		gw.NATSURL = n.URL()
		log.Info("embedded NATS started", "url", gw.NATSURL)
	}

	pki, err := certs.EnsurePKI(gw.DataDir, append([]string{"apichain", "kubernetes"}, gw.ExternalHosts...), []string{gw.BackendServerName})
	if err != nil {
		return err
	}
	backends := map[string]*backend.Backend{}
	newBackend := map[string]func(*backend.Options, *slog.Logger) (*backend.Backend, error){
		aggregator.Service: aggregator.New, core.Service: core.New, extensions.Service: extensions.New,
	}
	for _, svc := range gateway.ChainOrder {
		bo := backend.NewOptions(svc, 0)
		bo.InstanceID = svc + "-" + gw.InstanceID
		bo.BindAddress = "127.0.0.1:0"
		bo.TLSCertFile, bo.TLSKeyFile, bo.ClientCAFile = pki.BackendCertFile, pki.BackendKeyFile, pki.CAFile
		bo.EtcdServers = etcdServers
		bo.NATSURL = gw.NATSURL
		bo.LifecycleTTL = gw.LifecycleTTL
		if err := bo.Validate(); err != nil {
			return err
		}
		b, err := newBackend[svc](bo, log)
		if err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
		backends[svc] = b
	}
	gw.AggregatorAddresses = []string{backends[aggregator.Service].Address()}
	gw.CoreAddresses = []string{backends[core.Service].Address()}
	gw.ExtensionsAddresses = []string{backends[extensions.Service].Address()}
	g, err := gateway.New(gw, log)
	if err != nil {
		return err
	}
	log.Info("apichain all-in-one starting", "url", g.URL(), "kubeconfig", g.KubeconfigPath(),
		"try", "kubectl --kubeconfig "+g.KubeconfigPath()+" get --raw '/readyz?verbose'", "setup", time.Since(start).String())

	// The gateway stops first so its in-flight requests can still reach the backends; a
	// backend that fails (a failed post-start hook) stops everything, loudly.
	backendCtx, stopBackends := context.WithCancel(context.Background())
	defer stopBackends()
	backendErr := make(chan error, len(backends))
	var wg sync.WaitGroup
	for svc, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Run(backendCtx); err != nil {
				backendErr <- fmt.Errorf("%s: %w", svc, err)
			}
		}()
	}
	gwCtx, stopGateway := context.WithCancel(ctx)
	defer stopGateway()
	gwErr := make(chan error, 1)
	go func() { gwErr <- g.Run(gwCtx) }()
	var errs []error
	select {
	case err := <-gwErr:
		errs = append(errs, err)
	case err := <-backendErr:
		errs = append(errs, err)
		stopGateway()
		errs = append(errs, <-gwErr)
	}
	stopBackends()
	wg.Wait()
	close(backendErr)
	for err := range backendErr {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		log.Error("apichain stopped with an error", "err", err)
		return err
	}
	log.Info("apichain stopped cleanly")
	return nil
}
