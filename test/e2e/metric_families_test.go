package e2e

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// family is a metric family's type and label names.
type family struct {
	typ    string
	labels []string
}

// kubeFamilies are the metric families kube-apiserver 1.37.2 exports, recorded by
// testdata/kube-1.37/record-metric-families.sh after creates, gets, lists and watches of
// ConfigMaps, a webhook call and an unavailable APIService; the encryption families from a
// second run with --encryption-provider-config and its automatic reload (a Secret written and
// read, the file changed once), merged in.
func kubeFamilies(t testing.TB) map[string]family {
	f, err := os.Open("testdata/kube-1.37/metric-families.txt")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]family{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.GreaterOrEqual(t, len(fields), 2, sc.Text())
		fam := family{typ: fields[1]}
		if len(fields) == 3 {
			fam.labels = strings.Split(fields[2], ",")
		}
		out[fields[0]] = fam
	}
	require.NoError(t, sc.Err())
	return out
}

// parseFamilies reads a /metrics body's families.
func parseFamilies(t testing.TB, body string) map[string]family {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	out := map[string]family{}
	for name, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		fam := family{typ: strings.ToLower(mf.GetType().String())}
		for l := range labels {
			fam.labels = append(fam.labels, l)
		}
		slices.Sort(fam.labels)
		out[name] = fam
	}
	return out
}

// checkFamiliesMatchKube: every family a process exports that kube-apiserver has too has kube's
// type and label names, and the families want are there.
func checkFamiliesMatchKube(t *testing.T, process, body string, want []string) {
	kube := kubeFamilies(t)
	ours := parseFamilies(t, body)
	shared := 0
	for name, fam := range ours {
		k, ok := kube[name]
		if !ok {
			continue
		}
		shared++
		assert.Equal(t, k.typ, fam.typ, "%s: %s's type", process, name)
		// A family with no sample yet has no labels to compare.
		if len(fam.labels) > 0 {
			assert.Equal(t, k.labels, fam.labels, "%s: %s's labels", process, name)
		}
	}
	for _, name := range want {
		_, ok := ours[name]
		assert.True(t, ok, "%s exports %s", process, name)
		_, ok = kube[name]
		assert.True(t, ok, "kube-apiserver has %s too (else it belongs under apichain_)", name)
	}
	// kube's prefixes are kube's: a family of apichain's own is under apichain_. (Priority and
	// fairness's families are kube's library's own; some only appear once requests queue, which
	// the recording's idle server never did.)
	for name := range ours {
		if _, ok := kube[name]; !ok && hasKubePrefix(name) && !strings.HasPrefix(name, "apiserver_flowcontrol_") {
			t.Errorf("%s: %s has a kube prefix but kube-apiserver has no such metric (apichain's own belong under apichain_)", process, name)
		}
	}
	t.Logf("%s: %d families, %d of them kube's, all with kube's types and labels", process, len(ours), shared)
}

func hasKubePrefix(name string) bool {
	for _, p := range []string{"apiserver_", "etcd_", "aggregator_", "authentication_", "authorization_", "rest_client_", "workqueue_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
