package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/spf13/cobra"
)

// HealthcheckCommand asks the gateway's /readyz (anonymously, as load balancers do); it is
// the container healthcheck.
func HealthcheckCommand() *cobra.Command {
	var url, caFile, path string
	cmd := &cobra.Command{
		Use:          "healthcheck",
		Short:        "Exit 0 when the gateway at --url answers 200 on --path",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tlsCfg, err := certs.ClientTLSConfig(caFile, "", "", "")
			if err != nil {
				return err
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 3 * time.Second}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %d %s", path, resp.StatusCode, body)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&url, "url", fmt.Sprintf("https://127.0.0.1:%d", topology.GatewayPort), "Gateway URL.")
	fs.StringVar(&path, "path", "/readyz", "Health path to ask.")
	fs.StringVar(&caFile, "ca-file", "apichain-data/pki/ca.crt", "CA of the gateway's serving certificate.")
	return cmd
}
