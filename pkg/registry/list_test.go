package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func listPage(t testing.TB, h *Handler, ns string, opts *resourcev1.ListOptions, limit int64, token string) (*corev1.ConfigMapList, error) {
	t.Helper()
	resp, err := h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Options: opts, PageSize: limit, PageToken: token})
	if err != nil {
		return nil, err
	}
	out := &corev1.ConfigMapList{}
	decode(t, resp.GetBody(), out)
	assert.Equal(t, out.Continue, resp.GetNextPageToken())
	return out, nil
}

func listCMs(t testing.TB, ns, labelSelector string) *corev1.ConfigMapList {
	t.Helper()
	out, err := listPage(t, testH, ns, &resourcev1.ListOptions{LabelSelector: labelSelector}, 0, "")
	require.NoError(t, err)
	return out
}

func TestListSelectors(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		for _, c := range []struct {
			name   string
			labels map[string]string
		}{
			{"a1", map[string]string{"app": "a", "tier": "front"}},
			{"a2", map[string]string{"app": "a", "tier": "back"}},
			{"b1", map[string]string{"app": "b"}},
			{"none", nil},
		} {
			cm := configMap(c.name, nil)
			cm.Labels = c.labels
			create(t, cmResource, ns, cm)
		}

		tests := []struct {
			labels, fields string
			want           []string
		}{
			{"", "", []string{"a1", "a2", "b1", "none"}},
			{"app=a", "", []string{"a1", "a2"}},
			{"app==a,tier=back", "", []string{"a2"}},
			{"app!=a", "", []string{"b1", "none"}},
			{"app in (a,b)", "", []string{"a1", "a2", "b1"}},
			{"app notin (a)", "", []string{"b1", "none"}},
			{"app", "", []string{"a1", "a2", "b1"}},
			{"!app", "", []string{"none"}},
			{"app=c", "", []string{}},
			{"", "metadata.name=b1", []string{"b1"}},
			{"", "metadata.name!=b1", []string{"a1", "a2", "none"}},
			{"", "metadata.namespace=" + ns, []string{"a1", "a2", "b1", "none"}},
			{"", "metadata.namespace=elsewhere", []string{}},
			{"app=a", "metadata.name=a2", []string{"a2"}},
		}
		for _, tc := range tests {
			t.Run(tc.labels+"|"+tc.fields, func(t *testing.T) {
				list, err := listPage(t, h, ns, &resourcev1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields}, 0, "")
				require.NoError(t, err)
				assert.Equal(t, tc.want, names(list.Items), "keys are listed in order")
				assert.Equal(t, "ConfigMapList", list.Kind)
				assert.Equal(t, "v1", list.APIVersion)
				assert.NotEmpty(t, list.ResourceVersion)
				assert.Nil(t, list.RemainingItemCount)
			})
		}

		for _, tc := range []struct{ labels, fields, msg string }{
			{"app=(", "", "unable to parse requested label selector"},
			{"app=a b", "", "unable to parse requested label selector"},
			{"bad key!=x", "", "unable to parse requested label selector"},
			// ConfigMaps have kube's default field label conversion, and its words.
			{"", "data.k=1", `"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"`},
			{"", "spec.nodeName=n1", `"spec.nodeName" is not a known field selector`},
			{"", "metadata.name", "unable to parse requested field selector"},
			{"", "metadata.name=a,", ""},
		} {
			t.Run("bad "+tc.labels+"|"+tc.fields, func(t *testing.T) {
				_, err := listPage(t, h, ns, &resourcev1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields}, 0, "")
				if tc.msg == "" && err == nil {
					return // tolerated by kube's parser too
				}
				st := requireStatus(t, err, 400, metav1.StatusReasonBadRequest)
				assert.Contains(t, st.Message, tc.msg)
			})
		}
	})
}

func TestListAllNamespaces(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns1, ns2 := newNamespace(t), newNamespace(t)
		create(t, cmResource, ns1, configMap("everywhere", nil))
		create(t, cmResource, ns2, configMap("everywhere", nil))
		list, err := listPage(t, h, "", &resourcev1.ListOptions{FieldSelector: "metadata.name=everywhere"}, 0, "")
		require.NoError(t, err)
		var nss []string
		for _, cm := range list.Items {
			nss = append(nss, cm.Namespace)
		}
		assert.Subset(t, nss, []string{ns1, ns2})

		list, err = listPage(t, h, "", &resourcev1.ListOptions{FieldSelector: "metadata.name=everywhere,metadata.namespace=" + ns2}, 0, "")
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, ns2, list.Items[0].Namespace)
	})
}

func TestListPaginationIsASnapshot(t *testing.T) {
	h := testH
	ns := newNamespace(t)
	for i := range 25 {
		create(t, cmResource, ns, configMap(fmt.Sprintf("cm-%02d", i), map[string]string{"v": "old"}))
	}
	page1, err := listPage(t, h, ns, nil, 10, "")
	require.NoError(t, err)
	require.Len(t, page1.Items, 10)
	require.NotEmpty(t, page1.Continue)
	require.NotNil(t, page1.RemainingItemCount)
	assert.EqualValues(t, 15, *page1.RemainingItemCount)
	assert.Equal(t, "cm-00", page1.Items[0].Name)
	assert.Equal(t, "cm-09", page1.Items[9].Name)

	// Changes after the first page do not show in later pages.
	create(t, cmResource, ns, configMap("cm-99", nil))
	create(t, cmResource, ns, configMap("cm-10a", nil))
	_, err = patch(cmResource, ns, "cm-20", mergePatchType, `{"data":{"v":"new"}}`)
	require.NoError(t, err)
	_, err = testH.Delete(context.Background(), deleteReq(cmResource, ns, "cm-15", nil))
	require.NoError(t, err)

	page2, err := listPage(t, h, ns, nil, 10, page1.Continue)
	require.NoError(t, err)
	require.Len(t, page2.Items, 10)
	assert.Equal(t, page1.ResourceVersion, page2.ResourceVersion, "every page is at the first page's revision")
	require.NotNil(t, page2.RemainingItemCount)
	assert.EqualValues(t, 5, *page2.RemainingItemCount)

	page3, err := listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: "0"}, 10, page2.Continue)
	require.NoError(t, err)
	require.Len(t, page3.Items, 5)
	assert.Empty(t, page3.Continue)
	assert.Nil(t, page3.RemainingItemCount)

	var all []corev1.ConfigMap
	all = append(append(append(all, page1.Items...), page2.Items...), page3.Items...)
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("cm-%02d", i))
	}
	assert.Equal(t, want, names(all))
	for _, cm := range all {
		assert.Equal(t, "old", cm.Data["v"], cm.Name)
	}

	// A fresh list sees the changes.
	fresh := listCMs(t, ns, "")
	assert.Len(t, fresh.Items, 26)
	assert.Contains(t, names(fresh.Items), "cm-99")
	assert.NotContains(t, names(fresh.Items), "cm-15")

	// Pages exactly filling the list: no continue on the last.
	list, err := listPage(t, h, ns, nil, 26, "")
	require.NoError(t, err)
	assert.Len(t, list.Items, 26)
	assert.Empty(t, list.Continue)
}

func TestListPaginationWithSelector(t *testing.T) {
	h := testH
	ns := newNamespace(t)
	for i := range 12 {
		cm := configMap(fmt.Sprintf("cm-%02d", i), nil)
		cm.Labels = map[string]string{"even": strconv.FormatBool(i%2 == 0)}
		create(t, cmResource, ns, cm)
	}
	var got []string
	token := ""
	pages := 0
	for {
		page, err := listPage(t, h, ns, &resourcev1.ListOptions{LabelSelector: "even=true"}, 4, token)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(page.Items), 4)
		assert.Nil(t, page.RemainingItemCount, "no count under a selector: it would be a guess")
		got = append(got, names(page.Items)...)
		pages++
		if page.Continue == "" {
			break
		}
		token = page.Continue
		require.Less(t, pages, 10)
	}
	assert.Equal(t, []string{"cm-00", "cm-02", "cm-04", "cm-06", "cm-08", "cm-10"}, got)
}

func TestListBadRequests(t *testing.T) {
	h := testH
	ns := newNamespace(t)
	create(t, cmResource, ns, configMap("x", nil))
	page, err := listPage(t, h, ns, nil, 0, "")
	require.NoError(t, err)
	token := func(v any) string {
		data, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(data)
	}

	tests := []struct {
		name  string
		opts  *resourcev1.ListOptions
		limit int64
		cont  string
	}{
		{name: "continue not base64", cont: "!!!"},
		{name: "continue not json", cont: base64.RawURLEncoding.EncodeToString([]byte("nope"))},
		{name: "continue wrong version", cont: token(map[string]any{"v": "meta.k8s.io/v2", "rv": 5, "start": "a"})},
		{name: "continue no revision", cont: token(map[string]any{"v": "meta.k8s.io/v1", "rv": 0, "start": "a"})},
		{name: "continue no start", cont: token(map[string]any{"v": "meta.k8s.io/v1", "rv": 5, "start": ""})},
		{name: "continue escapes prefix", cont: token(map[string]any{"v": "meta.k8s.io/v1", "rv": 5, "start": "../secrets/x"})},
		{name: "continue absolute", cont: token(map[string]any{"v": "meta.k8s.io/v1", "rv": 5, "start": "/registry/x"})},
		{name: "continue with resourceVersion", opts: &resourcev1.ListOptions{ResourceVersion: page.ResourceVersion},
			cont: token(map[string]any{"v": "meta.k8s.io/v1", "rv": 5, "start": "a"})},
		{name: "resourceVersion not a number", opts: &resourcev1.ListOptions{ResourceVersion: "abc"}},
		{name: "negative resourceVersion", opts: &resourcev1.ListOptions{ResourceVersion: "-3"}},
		{name: "unknown resourceVersionMatch", opts: &resourcev1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Newest"}},
		{name: "Exact without version", opts: &resourcev1.ListOptions{ResourceVersionMatch: "Exact"}},
		{name: "negative limit", limit: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := listPage(t, h, ns, tc.opts, tc.limit, tc.cont)
			requireStatus(t, err, 400, metav1.StatusReasonBadRequest)
		})
	}
}

func TestListResourceVersions(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		created := create(t, cmResource, ns, configMap("rv", map[string]string{"v": "1"}))
		_, err := patch(cmResource, ns, "rv", mergePatchType, `{"data":{"v":"2"}}`)
		require.NoError(t, err)
		create(t, cmResource, ns, configMap("rv-later", nil))

		// Exact at the creation revision shows that state.
		old, err := listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: created.ResourceVersion, ResourceVersionMatch: "Exact"}, 0, "")
		require.NoError(t, err)
		require.Len(t, old.Items, 1)
		assert.Equal(t, "1", old.Items[0].Data["v"])
		assert.Equal(t, created.ResourceVersion, old.Items[0].ResourceVersion)
		assert.Equal(t, created.ResourceVersion, old.ResourceVersion)

		// Exact pages stay at that revision.
		page, err := listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: created.ResourceVersion, ResourceVersionMatch: "Exact"}, 1, "")
		require.NoError(t, err)
		assert.Len(t, page.Items, 1)
		assert.Empty(t, page.Continue)

		// NotOlderThan (and no match) at an older version serves a newer state: etcd's latest,
		// or the cache's, which may trail etcd but not the version asked for.
		for _, match := range []string{"", "NotOlderThan"} {
			now, err := listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: created.ResourceVersion, ResourceVersionMatch: match}, 0, "")
			require.NoError(t, err)
			listRV, err := strconv.ParseInt(now.ResourceVersion, 10, 64)
			require.NoError(t, err)
			createdRV, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)
			assert.GreaterOrEqual(t, listRV, createdRV)
			if h == testH {
				require.Len(t, now.Items, 2)
				assert.Equal(t, "2", now.Items[0].Data["v"])
				assert.Equal(t, strconv.FormatInt(currentRevision(t), 10), now.ResourceVersion)
			}
		}

		// A consistent read ("") sees every write made before it, from the cache too.
		fresh, err := listPage(t, h, ns, nil, 0, "")
		require.NoError(t, err)
		require.Len(t, fresh.Items, 2)
		assert.Equal(t, "2", fresh.Items[0].Data["v"])

		// A version etcd has not reached: kube's "Too large resource version" timeout.
		future := strconv.FormatInt(currentRevision(t)+1000, 10)
		matches := []string{"", "NotOlderThan", "Exact"}
		if h != testH {
			matches = []string{"NotOlderThan"} // the cache waits 3s for it first, as kube's does
		}
		for _, match := range matches {
			t.Run("future "+match, func(t *testing.T) {
				_, err := listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: future, ResourceVersionMatch: match}, 0, "")
				st := requireStatus(t, err, 504, metav1.StatusReasonTimeout)
				assert.Contains(t, st.Message, "Too large resource version")
			})
		}
	})
}

func TestListCompactedContinue(t *testing.T) {
	h := testH
	ns := newNamespace(t)
	for i := range 3 {
		create(t, cmResource, ns, configMap(fmt.Sprintf("c%d", i), nil))
	}
	page, err := listPage(t, h, ns, nil, 1, "")
	require.NoError(t, err)
	require.NotEmpty(t, page.Continue)
	listRV, _ := strconv.ParseInt(page.ResourceVersion, 10, 64)
	create(t, cmResource, ns, configMap("c9", nil))
	compact(t)

	_, err = listPage(t, h, ns, nil, 1, page.Continue)
	st := requireStatus(t, err, 410, metav1.StatusReasonExpired)
	assert.Contains(t, st.Message, "continue parameter is too old")

	_, err = listPage(t, h, ns, &resourcev1.ListOptions{ResourceVersion: strconv.FormatInt(listRV, 10), ResourceVersionMatch: "Exact"}, 0, "")
	requireStatus(t, err, 410, metav1.StatusReasonExpired)
}

// compact compacts etcd to its current revision.
func compact(t testing.TB) {
	t.Helper()
	_, err := testClient.Compact(context.Background(), currentRevision(t), clientv3.WithCompactPhysical())
	require.NoError(t, err)
}

func TestListEncodings(t *testing.T) {
	readers(t, func(t *testing.T, h *Handler) {
		ns := newNamespace(t)
		create(t, cmResource, ns, configMap("a", map[string]string{"k": "v"}))
		create(t, cmResource, ns, configMap("b", nil))

		resp, err := h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), PageSize: 1,
			Encoding: &resourcev1.Encoding{Accept: "application/json;as=Table;g=meta.k8s.io;v=v1"}})
		require.NoError(t, err)
		tbl := &metav1.Table{}
		require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), tbl))
		assert.Equal(t, "Table", tbl.Kind)
		require.Len(t, tbl.Rows, 1)
		assert.Equal(t, "a", tbl.Rows[0].Cells[0])
		assert.EqualValues(t, 1, tbl.Rows[0].Cells[1])
		assert.NotEmpty(t, tbl.Continue)
		require.NotNil(t, tbl.RemainingItemCount)
		assert.EqualValues(t, 1, *tbl.RemainingItemCount)
		assert.Len(t, tbl.ColumnDefinitions, 3)

		resp, err = h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""),
			Encoding: &resourcev1.Encoding{Accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}})
		require.NoError(t, err)
		pl := &metav1.PartialObjectMetadataList{}
		require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), pl))
		assert.Equal(t, "PartialObjectMetadataList", pl.Kind)
		require.Len(t, pl.Items, 2)
		assert.Equal(t, "b", pl.Items[1].Name)
		assert.NotEmpty(t, pl.ResourceVersion)

		resp, err = h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""),
			Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}})
		require.NoError(t, err)
		list := &corev1.ConfigMapList{}
		decode(t, resp.GetBody(), list)
		assert.Len(t, list.Items, 2)

		// A typed list's items have no kind or apiVersion, as kube's (converted from its
		// internal types), whether spliced from the cache or encoded whole (pretty); the list
		// has them, and a metadata list's items are PartialObjectMetadata, as kube's are.
		for _, pretty := range []bool{false, true} {
			resp, err = h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""),
				Encoding: &resourcev1.Encoding{Pretty: pretty}})
			require.NoError(t, err)
			var raw struct {
				Kind, APIVersion string
				Items            []map[string]any
			}
			require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), &raw))
			assert.Equal(t, "ConfigMapList", raw.Kind)
			assert.Equal(t, "v1", raw.APIVersion)
			require.Len(t, raw.Items, 2)
			for _, item := range raw.Items {
				assert.NotContains(t, item, "kind", "pretty %v", pretty)
				assert.NotContains(t, item, "apiVersion", "pretty %v", pretty)
			}
		}
		for _, item := range pl.Items {
			assert.Equal(t, "PartialObjectMetadata", item.Kind)
			assert.Equal(t, "meta.k8s.io/v1", item.APIVersion)
		}

		// An empty list has items [], not null.
		empty := newNamespace(t)
		resp, err = h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, empty, "")})
		require.NoError(t, err)
		assert.Contains(t, string(resp.GetBody().GetData()), `"items":[]`)
	})
}
