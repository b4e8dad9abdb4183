package readiness

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
)

func TestLifecycleCollector(t *testing.T) {
	reg := lifecycle.NewRegistry(time.Minute)
	reg.Upsert(&lifecyclev1.InstanceState{Service: "core", InstanceId: "c1", Ready: true}, lifecycle.SourceNATS)
	reg.Upsert(&lifecyclev1.InstanceState{Service: "core", InstanceId: "c2"}, lifecycle.SourceNATS)
	reg.SetSource(lifecycle.SourceGRPC)
	require.NoError(t, testutil.CollectAndCompare(LifecycleCollector(reg, nil), strings.NewReader(`
# HELP apichain_lifecycle_instance_ready 1 if the instance reports itself ready, 0 if not, for every instance of every service the gateway knows of (from NATS, or from gRPC health while NATS is unreachable).
# TYPE apichain_lifecycle_instance_ready gauge
apichain_lifecycle_instance_ready{instance="c1",service="core"} 1
apichain_lifecycle_instance_ready{instance="c2",service="core"} 0
# HELP apichain_lifecycle_source 1 for where the gateway reads the instances' lifecycle state from: nats, or grpc-health while NATS is unreachable.
# TYPE apichain_lifecycle_source gauge
apichain_lifecycle_source{source="grpc-health"} 1
apichain_lifecycle_source{source="nats"} 0
# HELP apichain_nats_connected 1 while this process is connected to NATS.
# TYPE apichain_nats_connected gauge
apichain_nats_connected 0
`), "apichain_lifecycle_instance_ready", "apichain_lifecycle_source", "apichain_nats_connected"))
}
