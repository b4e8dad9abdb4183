package registry

import (
	"context"

	"github.com/apichain/apichain/pkg/rpcstatus"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// AddWarnings sends warnings with the response of the current gRPC call (nothing outside one).
func AddWarnings(ctx context.Context, warnings ...string) {
	if len(warnings) == 0 {
		return
	}
	md := metadata.MD{}
	for _, w := range warnings {
		md.Append(rpcstatus.WarningMetadataKey, w)
	}
	_ = grpc.SetHeader(ctx, md)
}
