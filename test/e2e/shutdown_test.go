package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SIGTERM: readyz fails at once while requests are still served during the delay, in-flight
// requests complete, new connections are refused after the delay, the process exits 0, and
// the lifecycle signals fire in kube's order.
func TestGatewayGracefulShutdown(t *testing.T) {
	const delay = 3 * time.Second
	c, p := startAllInOne(t, "--shutdown-delay-duration", delay.String())

	// An in-flight request that outlives the delay: a 5 s CPU profile.
	inflight := make(chan int, 1)
	go func() {
		code, _, _ := c.get("/debug/pprof/profile?seconds=5")
		inflight <- code
	}()
	signalled := time.Now()
	p.signal(sigterm)

	// readyz fails immediately, and the server still answers other requests meanwhile.
	c.eventuallyBody("/readyz?verbose", http.StatusInternalServerError, delay, "[-]shutdown failed")
	code, _, _ := c.get("/version")
	assert.Equal(t, http.StatusOK, code, "requests are served during the shutdown delay")
	assert.Less(t, time.Since(signalled), delay, "checks happened within the delay")

	// After the delay new connections are refused.
	anon := c.anonymous()
	require.Eventually(t, func() bool {
		_, err := anon.Get(c.base + "/version")
		return err != nil && strings.Contains(err.Error(), "connection refused")
	}, 2*delay, 20*time.Millisecond, "new connections should be refused after the delay")
	assert.GreaterOrEqual(t, time.Since(signalled), delay)

	assert.Equal(t, http.StatusOK, <-inflight, "the in-flight request completed")
	assert.Equal(t, 0, p.wait(30*time.Second))

	order := signalOrder(p.output(), "gateway")
	idx := map[string]int{}
	for i, s := range order {
		idx[s] = i
	}
	require.Len(t, idx, 8, "all eight signals fired: %v", order)
	for _, pair := range [][2]string{
		{"MuxAndDiscoveryComplete", "ShutdownInitiated"},
		{"HasBeenReady", "ShutdownInitiated"},
		{"ShutdownInitiated", "AfterShutdownDelayDuration"},
		{"ShutdownInitiated", "PreShutdownHooksStopped"},
		{"AfterShutdownDelayDuration", "NotAcceptingNewRequest"},
		{"NotAcceptingNewRequest", "HTTPServerStoppedListening"},
		{"HTTPServerStoppedListening", "InFlightRequestsDrained"},
	} {
		assert.Less(t, idx[pair[0]], idx[pair[1]], "%s before %s in %v", pair[0], pair[1], order)
	}
}

// With --shutdown-send-retry-after the listener stays open during draining and new requests
// get 429 with Retry-After.
func TestGatewayShutdownSendRetryAfter(t *testing.T) {
	c, p := startAllInOne(t, "--shutdown-delay-duration", "1s", "--shutdown-send-retry-after")
	inflight := make(chan int, 1)
	go func() {
		code, _, _ := c.get("/debug/pprof/profile?seconds=4")
		inflight <- code
	}()
	p.signal(sigterm)
	anon := c.anonymous()
	var hdr http.Header
	require.Eventually(t, func() bool {
		var code int
		code, _, hdr = doGet(t, anon, c.base+"/version")
		return code == http.StatusTooManyRequests
	}, 10*time.Second, 20*time.Millisecond)
	assert.NotEmpty(t, hdr.Get("Retry-After"))
	assert.Equal(t, http.StatusOK, <-inflight)
	assert.Equal(t, 0, p.wait(30*time.Second))
}
