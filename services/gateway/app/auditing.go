package app

import (
	"fmt"
	"log/slog"

	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/nats-io/nats.go"
)

// auditing is the audit events' evaluator and where they go: a log file and a NATS stream
// (each nil when not asked for; the auditor nil when auditing is off).
type auditing struct {
	auditor *audit.Auditor
	log     *audit.LogBackend
	nats    *audit.NATSBackend
}

func newAuditing(o audit.Options, nc *nats.Conn, log *slog.Logger) (auditing, error) {
	if !o.Enabled() {
		return auditing{}, nil
	}
	policy, err := audit.LoadPolicy(o.PolicyFile)
	if err != nil {
		return auditing{}, fmt.Errorf("--audit-policy-file: %w", err)
	}
	var a auditing
	var sinks audit.Sinks
	if o.LogPath != "" {
		a.log = audit.NewLogBackend(o)
		sinks = append(sinks, a.log)
	}
	if o.NATSSubject != "" {
		if a.nats, err = audit.NewNATSBackend(nc, o, log); err != nil {
			return auditing{}, fmt.Errorf("--audit-nats-subject: %w", err)
		}
		sinks = append(sinks, a.nats)
	}
	a.auditor = audit.New(policy, sinks)
	return a, nil
}
