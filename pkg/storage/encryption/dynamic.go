package encryption

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/healthz"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Options are kube-apiserver's encryption flags.
type Options struct {
	ConfigFile      string
	AutomaticReload bool
}

// AddFlags registers --encryption-provider-config and its automatic reload.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "encryption-provider-config", o.ConfigFile,
		"The file containing configuration for encryption providers to be used for storing secrets in etcd")
	fs.BoolVar(&o.AutomaticReload, "encryption-provider-config-automatic-reload", o.AutomaticReload,
		"Determines if the file set by --encryption-provider-config should be automatically reloaded if the disk contents change. "+
			"Setting this to true disables the ability to uniquely identify distinct KMS plugins via the API server healthz endpoints.")
}

// reloadInterval is how often a reloaded configuration file is read for changes (kube: a
// minute; reading a small file and hashing it costs nothing). Tests shorten it.
var reloadInterval = 10 * time.Second

// kmsCloseGrace is how long a replaced configuration's KMS connections stay for the
// requests still using them.
const kmsCloseGrace = 10 * time.Second

// Dynamic is the configuration in use: the file's, loaded at start and, with automatic
// reload, again whenever its content changes and the new one is valid (a bad one is logged,
// counted, and the old one stays).
type Dynamic struct {
	file   string
	reload bool
	id     string
	log    *slog.Logger
	cur    atomic.Pointer[Config]
}

// Start loads o's file (nil, nil without one) and, with automatic reload, watches it until
// ctx ends. instanceID identifies this server in the reload metrics (hashed), as kube's
// apiserver identity does.
func Start(ctx context.Context, o Options, instanceID string, log *slog.Logger) (*Dynamic, error) {
	if o.ConfigFile == "" {
		return nil, nil
	}
	c, err := Load(ctx, o.ConfigFile, o.AutomaticReload)
	if err != nil {
		return nil, err
	}
	registerMetrics()
	d := &Dynamic{file: o.ConfigFile, reload: o.AutomaticReload, id: idHash(instanceID), log: log}
	d.cur.Store(c)
	lastConfigInfo.WithLabelValues(d.id, c.Hash).Set(1)
	if o.AutomaticReload {
		go d.watch(ctx)
	}
	return d, nil
}

// For is the transformer of a resource's values under the configuration in use (nil: kept
// as they are).
func (d *Dynamic) For(gr schema.GroupResource) value.Transformer { return d.cur.Load().For(gr) }

func (d *Dynamic) watch(ctx context.Context) {
	tick := time.NewTicker(reloadInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.cur.Load().Close()
			return
		case <-tick.C:
		}
		data, err := os.ReadFile(d.file)
		if err != nil || Hash(data) == d.cur.Load().Hash {
			continue // a file being replaced may be missing for a moment
		}
		c, err := Load(ctx, d.file, true)
		if err == nil {
			err = c.Check(ctx)
			if err != nil {
				c.Close()
			}
		}
		if err != nil {
			d.log.Error("encryption provider configuration not reloaded; the previous one stays in use", "file", d.file, "err", err)
			reloads.WithLabelValues("failure", d.id).Inc()
			reloadTime.WithLabelValues("failure", d.id).SetToCurrentTime()
			continue
		}
		old := d.cur.Swap(c)
		time.AfterFunc(kmsCloseGrace, old.Close)
		reloads.WithLabelValues("success", d.id).Inc()
		reloadTime.WithLabelValues("success", d.id).SetToCurrentTime()
		lastConfigInfo.DeleteLabelValues(d.id, old.Hash) // one series per server: the configuration in use
		lastConfigInfo.WithLabelValues(d.id, c.Hash).Set(1)
		d.log.Info("encryption provider configuration reloaded", "file", d.file, "hash", c.Hash)
	}
}

// HealthChecks are kube's: with automatic reload one "kms-providers" check of every KMS
// plugin of the configuration in use (present even without one); otherwise one
// "kms-provider-<i>" check per KMS plugin.
func (d *Dynamic) HealthChecks() []healthz.Checker {
	if d == nil {
		return nil
	}
	if d.reload {
		return []healthz.Checker{kmsCheck{name: "kms-providers", check: func(ctx context.Context) error { return d.cur.Load().Check(ctx) }}}
	}
	var out []healthz.Checker
	for i, p := range d.cur.Load().kms {
		out = append(out, kmsCheck{name: fmt.Sprintf("kms-provider-%d", i), check: p.check})
	}
	return out
}

type kmsCheck struct {
	name  string
	check func(context.Context) error
}

func (k kmsCheck) Name() string                  { return k.name }
func (k kmsCheck) Check(req *http.Request) error { return k.check(req.Context()) }

// kube's reload metrics (encryptionconfig/metrics), with its names and labels.
var (
	reloads = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Namespace: "apiserver", Subsystem: "encryption_config_controller", Name: "automatic_reloads_total",
		Help:           "Total number of reload successes and failures of encryption configuration split by apiserver identity.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"status", "apiserver_id_hash"})
	reloadTime = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Namespace: "apiserver", Subsystem: "encryption_config_controller", Name: "automatic_reload_last_timestamp_seconds",
		Help:           "Timestamp of the last successful or failed automatic reload of encryption configuration split by apiserver identity.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"status", "apiserver_id_hash"})
	lastConfigInfo = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Namespace: "apiserver", Subsystem: "encryption_config_controller", Name: "last_config_info",
		Help:           "Information about the last applied encryption configuration with hash as label, split by apiserver identity.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"apiserver_id_hash", "hash"})
	registerMetrics = sync.OnceFunc(func() { legacyregistry.MustRegister(reloads, reloadTime, lastConfigInfo) })
)

func idHash(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(id)))
}
