package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Options are kube's audit flags, and the NATS backend's.
type Options struct {
	PolicyFile string
	LogPath    string
	MaxAge     int
	MaxBackups int
	MaxSize    int
	// NATSSubject is the JetStream subject every gateway replica publishes its events to.
	NATSSubject string
	// NATSReplicas is how many nodes of a NATS JetStream cluster keep the stream.
	NATSReplicas int
}

// AddFlags registers the flags with kube's names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile,
		"audit.k8s.io/v1 Policy deciding what is audited at which level (default: apichain's policy, see services/gateway/audit/default-policy.yaml).")
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"Write audit events to this file as JSON lines of audit.k8s.io/v1 Event; \"-\" is standard output. Auditing is off without a backend.")
	fs.IntVar(&o.MaxAge, "audit-log-maxage", o.MaxAge, "Days to keep rotated audit log files (0: no limit).")
	fs.IntVar(&o.MaxBackups, "audit-log-maxbackup", o.MaxBackups, "Rotated audit log files to keep (0: no limit).")
	fs.IntVar(&o.MaxSize, "audit-log-maxsize", o.MaxSize, "Megabytes an audit log file grows to before it is rotated (0: 100).")
	fs.StringVar(&o.NATSSubject, "audit-nats-subject", o.NATSSubject,
		"Also publish audit events to this NATS JetStream subject (stream APICHAIN_AUDIT), so every gateway replica's events land in one stream.")
	fs.IntVar(&o.NATSReplicas, "audit-nats-replicas", max(o.NATSReplicas, 1), "How many nodes of a NATS JetStream cluster keep the audit stream (1 for a single NATS server).")
}

// Validate reports bad options.
func (o *Options) Validate() error {
	if o.MaxAge < 0 || o.MaxBackups < 0 || o.MaxSize < 0 {
		return errors.New("--audit-log-maxage, --audit-log-maxbackup and --audit-log-maxsize may not be negative")
	}
	if strings.ContainsAny(o.NATSSubject, " *>") {
		return errors.New("--audit-nats-subject must be a literal subject")
	}
	if o.NATSReplicas < 0 || o.NATSReplicas > 5 {
		return fmt.Errorf("--audit-nats-replicas must be 1 to 5 (JetStream's limit), not %d", o.NATSReplicas)
	}
	return nil
}

// Enabled reports whether any backend is configured.
func (o *Options) Enabled() bool { return o.LogPath != "" || o.NATSSubject != "" }

// Sink receives finished events.
type Sink interface {
	Process(ev *auditv1.Event)
}

// LogBackend writes events as JSON lines, rotating the file as kube does (lumberjack).
type LogBackend struct {
	mu  sync.Mutex
	out io.Writer
}

// NewLogBackend writes to o.LogPath.
func NewLogBackend(o Options) *LogBackend {
	if o.LogPath == "-" {
		return &LogBackend{out: os.Stdout}
	}
	return &LogBackend{out: &lumberjack.Logger{Filename: o.LogPath, MaxAge: o.MaxAge, MaxBackups: o.MaxBackups, MaxSize: o.MaxSize}}
}

// Process writes one line.
func (b *LogBackend) Process(ev *auditv1.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _ = b.out.Write(append(data, '\n'))
}

// Close closes the file.
func (b *LogBackend) Close() error {
	if c, ok := b.out.(io.Closer); ok && b.out != os.Stdout {
		return c.Close()
	}
	return nil
}

// StreamName is the JetStream stream the NATS backend publishes to.
const StreamName = "APICHAIN_AUDIT"

// NATSBackend publishes each event as JSON to a JetStream subject without waiting for the
// acknowledgement on the request path.
type NATSBackend struct {
	js       jetstream.JetStream
	subject  string
	replicas int
	log      *slog.Logger
}

// NewNATSBackend publishes to o.NATSSubject over nc; Run creates the stream.
func NewNATSBackend(nc *nats.Conn, o Options, log *slog.Logger) (*NATSBackend, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &NATSBackend{js: js, subject: o.NATSSubject, replicas: max(o.NATSReplicas, 1), log: log}, nil
}

// Run makes sure the stream exists (file storage, a week of events), retrying while NATS is
// away, then returns.
func (b *NATSBackend) Run(ctx context.Context) {
	for delay := 100 * time.Millisecond; ctx.Err() == nil; delay = min(2*delay, 5*time.Second) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := b.js.CreateOrUpdateStream(cctx, jetstream.StreamConfig{Name: StreamName, Subjects: []string{b.subject},
			Storage: jetstream.FileStorage, MaxAge: 7 * 24 * time.Hour, Replicas: b.replicas})
		cancel()
		if err == nil {
			return
		}
		b.log.Warn("audit: creating the NATS stream failed; will retry", "stream", StreamName, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// Process publishes the event.
func (b *NATSBackend) Process(ev *auditv1.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if _, err := b.js.PublishAsync(b.subject, data); err != nil {
		b.log.Warn("audit: publishing to NATS failed", "err", err)
	}
}

// Sinks sends each event to every sink.
type Sinks []Sink

// Process sends ev to every sink.
func (s Sinks) Process(ev *auditv1.Event) {
	for _, sink := range s {
		sink.Process(ev)
	}
}
