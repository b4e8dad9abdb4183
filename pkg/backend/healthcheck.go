package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// HealthcheckCommand asks a backend's grpc.health.v1 whether it serves; it is the
// container healthcheck (scratch images have no shell or curl).
func HealthcheckCommand(service string) *cobra.Command {
	var address, caFile, certFile, keyFile, serverName string
	cmd := &cobra.Command{
		Use:          "healthcheck",
		Short:        "Exit 0 when the " + service + " backend at --address is serving",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tlsCfg, err := certs.ClientTLSConfig(caFile, certFile, keyFile, serverName)
			if err != nil {
				return err
			}
			conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
			if err != nil {
				return err
			}
			if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("%s is %s", service, resp.GetStatus())
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&address, "address", fmt.Sprintf("127.0.0.1:%d", topology.BackendPort), "Backend gRPC address.")
	fs.StringVar(&caFile, "ca-file", "", "CA of the backend's serving certificate.")
	fs.StringVar(&certFile, "cert-file", "", "Client certificate signed by the same CA.")
	fs.StringVar(&keyFile, "key-file", "", "Client key.")
	fs.StringVar(&serverName, "server-name", topology.BackendServerName, "Name in the backend's serving certificate.")
	return cmd
}
