package healthz

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Checks that ran elsewhere are reported exactly as if the handler had run them.
func TestResultsHandlerReportsWhatRanElsewhere(t *testing.T) {
	checks := []Checker{okCheck("ping"), notedCheck{okCheck("core")}, failCheck("etcd", "down")}
	runs := 0
	h := ResultsHandler("readyz", func(r *http.Request) []Result {
		runs++
		return Run(r, checks)
	})
	direct := Handler("readyz", fixed(checks...))
	for _, q := range []string{"verbose", "", "exclude=etcd&verbose"} {
		got, want := serve(h, http.MethodGet, "/readyz", q), serve(direct, http.MethodGet, "/readyz", q)
		assert.Equal(t, want.Code, got.Code, q)
		assert.Equal(t, want.Body.String(), got.Body.String(), q)
	}
	w := serve(h, http.MethodGet, "/readyz/etcd", "")
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Contains(t, w.Body.String(), "down")
	assert.Equal(t, 4, runs, "once per request")

	res := Run(nil, checks)
	assert.Equal(t, Result{CheckName: "core", NoteText: "2/2 instances ready"}, res[1])
	assert.EqualError(t, res[2].Err, "down")
}
