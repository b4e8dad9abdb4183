package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/process"
	"github.com/apichain/apichain/pkg/topology"
)

// The names of the modules that complete the gateway's options and make the certificates.
const (
	ModuleOptions = "gateway-options"
	ModulePKI     = "pki"
)

// Modules are the gateway's process modules, sharing its options: "gateway-options" completes
// and validates them, "pki" makes (or keeps) the certificates in --data-dir, "gateway"
// serves. The all-in-one starts the backends between pki and gateway, with pki's
// certificates, and its embedded etcd and NATS next to pki.
type Modules struct {
	Options *Options
	// PKI is set once the pki module started.
	PKI  *certs.PKI
	conn *lifecycle.NATS
}

// NewModules returns the gateway's modules with default options; conn is the process's NATS.
func NewModules(conn *lifecycle.NATS) *Modules {
	return &Modules{Options: NewOptions(), conn: conn}
}

// OptionsModule completes and validates the options.
func (m *Modules) OptionsModule() process.Module {
	return process.Module{
		Name: ModuleOptions,
		Init: func(context.Context, *slog.Logger) (process.Service, error) {
			if err := m.Options.Complete(); err != nil {
				return nil, err
			}
			return nil, m.Options.Validate()
		},
	}
}

// PKIModule ensures the certificates.
func (m *Modules) PKIModule() process.Module {
	return process.Module{
		Name: ModulePKI,
		Deps: []string{ModuleOptions},
		Init: func(context.Context, *slog.Logger) (process.Service, error) {
			o := m.Options
			pki, err := certs.EnsurePKI(o.DataDir, topology.ServingHosts(o.ExternalHosts...), []string{o.BackendServerName})
			if err != nil {
				return nil, fmt.Errorf("certificates: %w", err)
			}
			m.PKI = pki
			return nil, nil
		},
	}
}

// GatewayModule is the front door; it needs the certificates and NATS.
func (m *Modules) GatewayModule() process.Module {
	return process.Module{
		Name:  topology.Gateway,
		Deps:  []string{ModulePKI, lifecycle.ModuleNATS},
		Flags: m.Options.AddFlags,
		Init: func(_ context.Context, log *slog.Logger) (process.Service, error) {
			return New(m.Options, m.PKI, m.conn.Conn, log)
		},
	}
}

// Main runs the gateway as its own process.
func Main() {
	p := process.New()
	conn := lifecycle.NewNATS()
	m := NewModules(conn)
	p.Register(conn.Module(topology.Gateway))
	p.Register(m.OptionsModule())
	p.Register(m.PKIModule())
	p.Register(m.GatewayModule())
	cmd := p.Command(topology.Gateway, "apichain gateway: TLS front door, filter chain and delegation to the backends", topology.Gateway)
	cmd.AddCommand(HealthcheckCommand(), InitPKICommand())
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
