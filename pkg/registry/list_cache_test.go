package registry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Every page of a paginated list from the watch cache is the list etcd gives at the same
// revision. Random creates, changes and deletes across namespaces; then each list form
// (one namespace or all, page sizes, label selectors) is walked page by page while more
// writes land, after etcd has compacted the list's revision away: the continuations can only
// come from the cache's snapshot, and must still match what etcd had at that revision.
func TestCachedListsMatchEtcd(t *testing.T) {
	h, ctx := testCachedH, context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	nss := []string{newNamespace(t), newNamespace(t), newNamespace(t)}
	type nsName struct{ ns, name string }
	live := map[nsName]bool{}
	write := func(n int) {
		for range n {
			k := nsName{nss[rng.IntN(len(nss))], fmt.Sprintf("o%02d", rng.IntN(30))}
			switch {
			case !live[k]:
				cm := configMap(k.name, map[string]string{"v": strconv.Itoa(rng.IntN(1000))})
				cm.Labels = map[string]string{"a": strconv.Itoa(rng.IntN(3))}
				create(t, cmResource, k.ns, cm)
				live[k] = true
			case rng.IntN(3) == 0:
				_, err := testH.Delete(ctx, deleteReq(cmResource, k.ns, k.name, nil))
				require.NoError(t, err)
				live[k] = false
			default:
				_, err := patch(cmResource, k.ns, k.name, mergePatchType,
					fmt.Sprintf(`{"metadata":{"labels":{"a":"%d"}},"data":{"v":"%d"}}`, rng.IntN(3), rng.IntN(1000)))
				require.NoError(t, err)
			}
		}
	}
	write(200)

	type item struct{ ns, name, rv, v, a string }
	items := func(list []corev1.ConfigMap) []item {
		out := make([]item, 0, len(list))
		for _, cm := range list {
			out = append(out, item{cm.Namespace, cm.Name, cm.ResourceVersion, cm.Data["v"], cm.Labels["a"]})
		}
		return out
	}
	// etcdAt is what etcd holds at rev under ns, filtered by the selector.
	etcdAt := func(ns string, rev int64, sel string) []item {
		ls, err := labels.Parse(sel)
		require.NoError(t, err)
		page, err := testStore.List(ctx, prefix(cmResource, ns), rev, "", 0)
		require.NoError(t, err)
		var out []corev1.ConfigMap
		for _, kv := range page.KVs {
			obj, err := testH.decodeStored(cmResource, kv.Value, kv.ModRevision)
			require.NoError(t, err)
			if cm := obj.(*corev1.ConfigMap); ls.Matches(labels.Set(cm.Labels)) {
				out = append(out, *cm)
			}
		}
		return items(out)
	}

	for _, ns := range []string{nss[0], ""} {
		for _, limit := range []int64{1, 4, 25} {
			for _, sel := range []string{"", "a=1", "a!=1"} {
				t.Run(fmt.Sprintf("ns=%q limit=%d selector=%q", ns, limit, sel), func(t *testing.T) {
					// The cache has seen every write, so the first page is the cache's.
					require.NoError(t, h.cache(cmResource).waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))
					opts := &resourcev1.ListOptions{LabelSelector: sel}
					first, err := listPage(t, h, ns, opts, limit, "")
					require.NoError(t, err)
					rev, err := strconv.ParseInt(first.ResourceVersion, 10, 64)
					require.NoError(t, err)
					want := etcdAt(ns, rev, sel)
					write(5)
					compact(t) // etcd can no longer serve the list's revision

					got, page := items(first.Items), first
					for pages := 1; page.Continue != ""; pages++ {
						require.Less(t, pages, 200, "the pages end")
						if sel == "" {
							require.NotNil(t, page.RemainingItemCount)
							assert.EqualValues(t, len(want)-len(got), *page.RemainingItemCount, "remaining after page %d", pages)
						}
						write(2)
						page, err = listPage(t, h, ns, opts, limit, page.Continue)
						require.NoError(t, err, "page %d, from the cache's snapshot", pages+1)
						assert.Equal(t, first.ResourceVersion, page.ResourceVersion)
						assert.LessOrEqual(t, int64(len(page.Items)), limit)
						got = append(got, items(page.Items)...)
					}
					assert.Nil(t, page.RemainingItemCount, "the last page has none")
					assert.Equal(t, want, got)
				})
			}
		}
	}
}

// BenchmarkPaginatedList reads 2,000 ConfigMaps in pages of 500 from the handler (the JSON
// answers are not decoded): every page from etcd (as the handler without a watch cache, and
// continuations before the cache kept snapshots), against every page from the watch cache's
// snapshot.
func BenchmarkPaginatedList(b *testing.B) {
	ns := newNamespace(b)
	for i := range 2000 {
		create(b, cmResource, ns, configMap(fmt.Sprintf("cm-%04d", i), map[string]string{"k": "v"}))
	}
	for _, c := range []struct {
		name   string
		h      *Handler
		accept string
		limit  int64
		pages  int
	}{{"etcd", testH, "", 500, 4}, {"cache", testCachedH, "", 500, 4}, {"cache/protobuf", testCachedH, MediaProtobuf, 500, 4},
		{"cache/one-page", testCachedH, "", 0, 1}, {"cache/protobuf/one-page", testCachedH, MediaProtobuf, 0, 1}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				pages, token := 0, ""
				for {
					resp, err := c.h.List(context.Background(), &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""),
						Encoding: &resourcev1.Encoding{Accept: c.accept}, PageSize: c.limit, PageToken: token})
					require.NoError(b, err)
					pages++
					if token = resp.GetNextPageToken(); token == "" {
						break
					}
				}
				require.Equal(b, c.pages, pages)
			}
		})
	}
}

// Lists from the watch cache hand the cache's own objects to the encoders (no copy): lists in
// every encoding, watches and in-process clients read them at once while they change. Run
// with -race, it finds any encoder that writes to a shared object.
func TestCachedReadsShareObjectsSafely(t *testing.T) {
	ns := newNamespace(t)
	for i := range 20 {
		cm := configMap(fmt.Sprintf("cm-%02d", i), map[string]string{"k": "v"})
		cm.Labels = map[string]string{"app": "x"}
		create(t, cmResource, ns, cm)
	}
	accepts := []string{"", MediaProtobuf, "application/json;as=Table;g=meta.k8s.io;v=v1", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := startWatch(t, testCachedH, &resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}})
	go func() {
		for {
			select {
			case <-w.stream.ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 10 {
				accept := accepts[(g+i)%len(accepts)]
				_, err := testCachedH.List(ctx, &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), PageSize: int64(5 * (i % 2)),
					Encoding: &resourcev1.Encoding{Accept: accept}})
				if err != nil {
					done <- err
					return
				}
				if _, err := NewClient(testCachedH).ListCached(ctx, cmResource, ns); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for i := range 10 {
		_, err := patch(cmResource, ns, fmt.Sprintf("cm-%02d", i), mergePatchType, `{"data":{"k":"w"}}`)
		require.NoError(t, err)
	}
	for range 8 {
		require.NoError(t, <-done)
	}
}

// A JSON or protobuf list from the watch cache splices in its items' cached encodings; its
// bytes are the whole list's, encoded at once, for every list form: pages with their continue token and
// remaining count, selectors, no items at all, and values JSON escapes (HTML, U+2028,
// quotes, control characters, invalid UTF-8), read twice so the second comes from the
// cached encodings.
func TestSplicedListIsTheWholeList(t *testing.T) {
	h, ctx := testCachedH, context.Background()
	ns, empty := newNamespace(t), newNamespace(t)
	values := []string{"<b>&amp;</b>", "line\u2028sep\u2029", `"quoted" \back\`, "tab\tnew\nline\x01", "bad\xffutf8", "é漢字🙂", ""}
	for i, v := range values {
		cm := configMap(fmt.Sprintf("c%d", i), map[string]string{"v": v, "w": "x" + v})
		cm.Labels = map[string]string{"a": strconv.Itoa(i % 2)}
		cm.Annotations = map[string]string{"note": v}
		create(t, cmResource, ns, cm)
		if i%3 == 0 { // a second manager
			_, err := patch(cmResource, ns, cm.Name, mergePatchType, `{"metadata":{"labels":{"p":"1"}}}`)
			require.NoError(t, err)
		}
	}
	create(t, cmResource, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nodata"}})
	require.NoError(t, h.cache(cmResource).waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))

	for _, namespace := range []string{ns, empty} {
		for _, limit := range []int64{0, 1, 3} {
			for _, sel := range []string{"", "a=1"} {
				t.Run(fmt.Sprintf("ns=%s limit=%d selector=%q", namespace, limit, sel), func(t *testing.T) {
					opts := &resourcev1.ListOptions{LabelSelector: sel}
					cont, pages := "", 0
					for {
						res, err := h.list(ctx, cmResource, namespace, opts, limit, cont)
						require.NoError(t, err)
						require.True(t, res.shared, "served from the cache")
						for _, enc := range []*resourcev1.Encoding{{}, {Accept: MediaProtobuf}} {
							whole, err := h.encodeList(cmResource, res, enc, false)
							require.NoError(t, err)
							for range 2 {
								spliced, err := h.encodeList(cmResource, res, enc, true)
								require.NoError(t, err)
								require.Equal(t, bodyBytes(t, whole), bodyBytes(t, spliced), "%v", enc)
							}
							// In pieces of any size, the same bytes.
							for _, chunk := range []int{1, 7, 100, 1 << 20} {
								spliced, err := h.encodeList(cmResource, res, enc, true)
								require.NoError(t, err)
								assert.Equal(t, bodyBytes(t, whole), pieces(t, spliced, chunk), "%v in pieces of %d", enc, chunk)
							}
						}
						if pages++; res.cont == "" {
							break
						}
						cont = res.cont
					}
					if limit == 1 && namespace == ns {
						assert.Greater(t, pages, 3, "paginated")
					}
				})
			}
		}
	}
	// The handler splices plain JSON only; it answers each the same as the whole list.
	for _, enc := range []*resourcev1.Encoding{{}, {Pretty: true}, {Accept: MediaProtobuf}, {Accept: "application/json;as=Table;g=meta.k8s.io;v=v1"}} {
		res, err := h.list(ctx, cmResource, ns, &resourcev1.ListOptions{}, 0, "")
		require.NoError(t, err)
		whole, err := h.encodeList(cmResource, res, enc, false)
		require.NoError(t, err)
		resp, err := h.List(ctx, &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: enc})
		require.NoError(t, err)
		stream := &listStream{ctx: ctx}
		require.NoError(t, h.StreamList(&resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: enc}}, stream))
		require.NotEmpty(t, stream.sent)
		if !strings.Contains(enc.GetAccept(), "Table") { // a Table has its own time-dependent cells
			assert.Equal(t, string(bodyBytes(t, whole)), string(resp.GetBody().GetData()), "%v", enc)
			assert.Equal(t, string(bodyBytes(t, whole)), string(stream.data()), "%v", enc)
		}
		assert.Equal(t, whole.contentType, resp.GetBody().GetContentType())
		assert.Equal(t, whole.contentType, stream.sent[0].GetBody().GetContentType())
		for _, piece := range stream.sent[1:] {
			assert.Empty(t, piece.GetBody().GetContentType(), "only the first piece has the content type")
		}
	}
}

// bodyBytes is the whole body.
func bodyBytes(t *testing.T, b *listBody) []byte {
	t.Helper()
	data, err := b.bytes()
	require.NoError(t, err)
	return data
}

// pieces is the body written in pieces of chunk bytes, put together again.
func pieces(t *testing.T, b *listBody, chunk int) []byte {
	var out []byte
	require.NoError(t, b.write(chunk, false, func(data []byte) error {
		out = append(out, data...)
		return nil
	}))
	return out
}

// listStream is a StreamList call's server side, keeping what is sent.
type listStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent []*resourcev1.StreamListResponse
}

func (s *listStream) Context() context.Context { return s.ctx }

func (s *listStream) Send(m *resourcev1.StreamListResponse) error {
	s.sent = append(s.sent, m)
	return nil
}

func (s *listStream) data() []byte {
	var out []byte
	for _, m := range s.sent {
		out = append(out, m.GetBody().GetData()...)
	}
	return out
}

// A list of many objects comes in pieces of about listChunk bytes, the page token with the
// first; errors come before any piece, as the call's status.
func TestStreamListInPieces(t *testing.T) {
	h, ctx := testCachedH, context.Background()
	ns := newNamespace(t)
	big := strings.Repeat("x", 4<<10)
	for i := range 200 {
		create(t, cmResource, ns, configMap(fmt.Sprintf("c%03d", i), map[string]string{"v": big}))
	}
	require.NoError(t, h.cache(cmResource).waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))
	for _, enc := range []*resourcev1.Encoding{{}, {Accept: MediaProtobuf}} {
		resp, err := h.List(ctx, &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: enc, PageSize: 150})
		require.NoError(t, err)
		require.NotEmpty(t, resp.GetNextPageToken())
		stream := &listStream{ctx: ctx}
		require.NoError(t, h.StreamList(&resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: enc, PageSize: 150}}, stream))
		assert.Greater(t, len(stream.sent), 2, "150 objects of 4 KiB in pieces of %d", listChunk)
		for _, piece := range stream.sent {
			assert.LessOrEqual(t, len(piece.GetBody().GetData()), listChunk+listChunk/4+8<<10)
		}
		assert.Equal(t, resp.GetNextPageToken(), stream.sent[0].GetNextPageToken())
		assert.Equal(t, resp.GetBody().GetData(), stream.data())
	}
	stream := &listStream{ctx: ctx}
	err := h.StreamList(&resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""),
		Options: &resourcev1.ListOptions{LabelSelector: "a in ("}}}, stream)
	assert.Error(t, err)
	assert.NotEqual(t, codes.Unknown, status.Code(err), "%v", err)
	assert.Empty(t, stream.sent)
}

// With accept_gzip, a list larger than kube's threshold comes as one gzip stream in pieces of
// about gzipChunk bytes, the first naming the encoding; a smaller one comes plain.
func TestStreamListCompressed(t *testing.T) {
	h, ctx := testCachedH, context.Background()
	ns := newNamespace(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		data := make([]byte, 3<<10)
		for j := range data {
			data[j] = byte('a' + rnd.IntN(26)) // random, so the compressed list takes several pieces
		}
		create(t, cmResource, ns, configMap(fmt.Sprintf("c%03d", i), map[string]string{"v": string(data)}))
	}
	require.NoError(t, h.cache(cmResource).waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))
	for _, enc := range []*resourcev1.Encoding{{}, {Accept: MediaProtobuf}} {
		for _, pageSize := range []int64{0, 1} {
			list := &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: enc, PageSize: pageSize}
			resp, err := h.List(ctx, list)
			require.NoError(t, err)
			stream := &listStream{ctx: ctx}
			require.NoError(t, h.StreamList(&resourcev1.StreamListRequest{List: list, AcceptGzip: true}, stream))
			first := stream.sent[0]
			assert.Equal(t, resp.GetBody().GetContentType(), first.GetBody().GetContentType())
			assert.Equal(t, resp.GetNextPageToken(), first.GetNextPageToken())
			if pageSize == 1 {
				assert.Empty(t, first.GetContentEncoding(), "one object is below the threshold")
				assert.Equal(t, resp.GetBody().GetData(), stream.data())
				continue
			}
			assert.Equal(t, "gzip", first.GetContentEncoding())
			assert.Greater(t, len(stream.sent), 2, "%d compressed bytes in pieces of %d", len(stream.data()), gzipChunk)
			for _, piece := range stream.sent[1:] {
				assert.Empty(t, piece.GetContentEncoding())
				assert.LessOrEqual(t, len(piece.GetBody().GetData()), gzipChunk+gzipChunk/4+64<<10)
			}
			zr, err := gzip.NewReader(bytes.NewReader(stream.data()))
			require.NoError(t, err)
			plain, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, resp.GetBody().GetData(), plain)
		}
	}
}
