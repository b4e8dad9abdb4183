package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// errUnhealthy makes the command exit non-zero after printing its report.
var errUnhealthy = errors.New("something is wrong: see the warnings and failures above")

// NewCommand is `apichain diagnose`.
func NewCommand() *cobra.Command {
	var kubeconfig, kubeContext, output string
	th := DefaultThresholds
	cmd := &cobra.Command{
		Use:   "diagnose",
		Short: "Run the API server startup troubleshooting checklist against a running apichain",
		Long: `diagnose reads what a running apichain (all-in-one or compose, every service and instance)
exposes to a client — /readyz, /debug/lifecycle, /metrics, APIServices and webhook
configurations — and reports, with a verdict, the likely cause and the fix: services without a
ready instance, post-start hooks not finished, failed or slow, cache sync times, etcd's health
and round trip from each backend, failing, paused or risky admission webhooks, unavailable
APIServices and their OpenAPI, priority-and-fairness rejections, NATS, and the serving
certificate. It exits 1 when anything is a warning or a failure (docs/troubleshooting.md).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := run(cmd, kubeconfig, kubeContext, output, th)
			if err != nil && !errors.Is(err, errUnhealthy) {
				fmt.Fprintln(cmd.ErrOrStderr(), "apichain diagnose:", err)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&kubeContext, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&output, "output", "o", "text", "text or json")
	fs.DurationVar(&th.SlowHook, "slow-hook", th.SlowHook, "a post-start hook or cache sync slower than this is a warning")
	fs.DurationVar(&th.SlowEtcd, "slow-etcd", th.SlowEtcd, "an etcd round trip slower than this is a warning")
	fs.DurationVar(&th.WebhookTimeout, "webhook-timeout", th.WebhookTimeout, "a failurePolicy Fail webhook with a longer timeout is a warning")
	fs.DurationVar(&th.CertificateExpiry, "certificate-expiry", th.CertificateExpiry, "a serving certificate expiring sooner is a warning")
	return cmd
}

// run diagnoses the server of the kubeconfig and prints the report.
func run(cmd *cobra.Command, kubeconfig, kubeContext, output string, th Thresholds) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("-o must be text or json, not %q", output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()
	report, err := Run(ctx, cfg, th)
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		Print(cmd.OutOrStdout(), report)
	}
	if !report.Healthy() {
		return errUnhealthy
	}
	return nil
}

// Print writes the report for a person: every check's findings, problems with cause and fix.
func Print(w io.Writer, r *Report) {
	fmt.Fprintf(w, "apichain diagnose: %s at %s\n", r.Server, r.At.Format(time.RFC3339))
	check := ""
	problems := 0
	for _, f := range r.Findings {
		if f.Check != check {
			check = f.Check
			fmt.Fprintf(w, "\n%s\n", check)
		}
		mark := map[Verdict]string{OK: "ok  ", Warning: "WARN", Failed: "FAIL"}[f.Verdict]
		fmt.Fprintf(w, "  [%s] %s\n", mark, f.Message)
		if f.Verdict == OK {
			continue
		}
		problems++
		if f.Cause != "" {
			fmt.Fprintf(w, "         cause: %s\n", f.Cause)
		}
		if f.Fix != "" {
			fmt.Fprintf(w, "         fix:   %s\n", f.Fix)
		}
	}
	if problems == 0 {
		fmt.Fprintln(w, "\nno problem found")
		return
	}
	noun := "problems"
	if problems == 1 {
		noun = "problem"
	}
	fmt.Fprintf(w, "\n%d %s found\n", problems, noun)
}
