package server

import "github.com/spf13/pflag"

// AddFlags registers the generic server's flags, named as kube-apiserver names them.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.ShutdownDelayDuration, "shutdown-delay-duration", o.ShutdownDelayDuration,
		"Time to keep serving after shutdown starts (readyz already fails) so balancers and the gateway stop routing here.")
	fs.BoolVar(&o.ShutdownSendRetryAfter, "shutdown-send-retry-after", o.ShutdownSendRetryAfter,
		"During shutdown keep the listener open until in-flight requests drained, answering new requests with 429 and Retry-After.")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "Upper bound for draining in-flight requests.")
	fs.DurationVar(&o.LivezGracePeriod, "livez-grace-period", o.LivezGracePeriod, "Time after start during which livez checks pass regardless.")
	fs.DurationVar(&o.TestingSlowHook, "testing-slow-post-start-hook", 0, "For tests: a post-start hook, testing-slow-hook, that takes this long.")
	_ = fs.MarkHidden("testing-slow-post-start-hook")
}
