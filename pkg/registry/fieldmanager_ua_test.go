package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/apichain/apichain/pkg/caller"
	"github.com/stretchr/testify/assert"
)

// A write without a fieldManager is tracked under its client's User-Agent up to the first
// "/", printable characters only and at most 128 bytes, as kube does; a named manager wins.
func TestManagerOrUserAgent(t *testing.T) {
	for _, tc := range []struct{ manager, userAgent, want string }{
		{"", "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07", "kubectl"},
		{"", "grpcurl/v1.9.3 grpc-go/1.85.0", "grpcurl"},
		{"", "curl/8.5.0", "curl"},
		{"", "a\x00b\tc/1", "abc"},
		{"", strings.Repeat("f", 200) + "/x", strings.Repeat("f", 128)},
		{"", strings.Repeat("🍔", 40), strings.Repeat("🍔", 32)},
		{"", "", ""},
		{"mine", "kubectl/v1.32.4", "mine"},
	} {
		ctx := caller.WithUserAgent(context.Background(), tc.userAgent)
		assert.Equal(t, tc.want, managerOrUserAgent(ctx, tc.manager), "%q %q", tc.manager, tc.userAgent)
	}
}
