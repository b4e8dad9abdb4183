package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// /debug/startup lists every hook that ran, per service, with durations, as JSON and as a
// self-contained HTML page; it needs credentials like the other /debug paths.
func TestStartupTimeline(t *testing.T) {
	c, _ := startAllInOne(t)
	_, readyz, _ := c.get("/readyz?verbose")

	// The hooks readyz reports, as "service/hook" (the gateway's own have no prefix).
	var want []string
	re := regexp.MustCompile(`(?m)^\[\+\](?:([a-z]+)/)?poststarthook/(\S+) ok`)
	for _, m := range re.FindAllStringSubmatch(readyz, -1) {
		svc := m[1]
		if svc == "" {
			svc = "gateway"
		}
		want = append(want, svc+"/"+m[2])
	}
	require.NotEmpty(t, want)

	code, body, hdr := c.get("/debug/startup")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	var tl struct {
		Instances []struct {
			Service string   `json:"service"`
			ReadyMs *float64 `json:"readyMs"`
			StartMs float64  `json:"startMs"`
			Hooks   []struct {
				Name       string   `json:"name"`
				StartMs    float64  `json:"startMs"`
				DurationMs *float64 `json:"durationMs"`
			} `json:"hooks"`
		} `json:"instances"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &tl))
	var got []string
	services := map[string]bool{}
	for _, it := range tl.Instances {
		services[it.Service] = true
		require.NotNil(t, it.ReadyMs, it.Service)
		for _, h := range it.Hooks {
			got = append(got, it.Service+"/"+h.Name)
			require.NotNil(t, h.DurationMs, "%s/%s finished", it.Service, h.Name)
			assert.GreaterOrEqual(t, *h.DurationMs, 0.0)
			assert.GreaterOrEqual(t, h.StartMs, it.StartMs, "a hook starts after its process")
			assert.LessOrEqual(t, h.StartMs+*h.DurationMs, *it.ReadyMs+1, "hooks finish before ready")
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got, "the timeline has exactly the hooks that ran")
	assert.Equal(t, map[string]bool{"gateway": true, "aggregator": true, "core": true, "extensions": true}, services)

	req, err := http.NewRequest(http.MethodGet, c.base+"/debug/startup", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/html")
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	html := string(raw)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	for _, h := range got {
		assert.Contains(t, html, "poststarthook/"+strings.SplitN(h, "/", 2)[1])
	}
	assert.NotRegexp(t, `(?i)(src|href)\s*=|https?://|@import|url\(`, html, "the page loads nothing from the network")

	code, _, _ = doGet(t, c.anonymous(), c.base+"/debug/startup")
	assert.Equal(t, http.StatusForbidden, code, "system:anonymous may not read it")

	_, metrics, _ := c.get("/metrics")
	assert.Contains(t, metrics, `apichain_startup_duration_seconds{instance=`)
	assert.Contains(t, metrics, `apichain_poststarthook_duration_seconds_count{hook="storage-readiness",service="core"} 1`)
}
