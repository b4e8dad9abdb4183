package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The budget keeps what fits and counts what it gives back; encodings of an object that left
// the cache are not kept. What is not kept is encoded for each use.
func TestEncodingBudget(t *testing.T) {
	b := &encodingBudget{}
	b.max.Store(100)
	made := 0
	encode := func(data string) func([]byte) ([]byte, error) {
		return func(out []byte) ([]byte, error) { made++; return append(out, data...), nil }
	}
	appendTo := func(e *encodings, o output, data string) string {
		t.Helper()
		out, err := e.appendTo(o, []byte("<"), encode(data))
		require.NoError(t, err)
		return string(out)
	}
	a, c := &encodings{budget: b}, &encodings{budget: b}
	sixty := strings.Repeat("a", 60)
	assert.Equal(t, "<"+sixty, appendTo(a, listItemJSON, sixty))
	assert.Equal(t, "<"+sixty, appendTo(a, listItemJSON, sixty))
	assert.Equal(t, 1, made, "kept: encoded once")
	appendTo(c, listItemJSON, sixty)
	appendTo(c, listItemJSON, sixty)
	assert.Equal(t, 3, made, "120 bytes do not fit 100: encoded for each use")
	assert.EqualValues(t, 60, b.used.Load())

	a.release()
	a.release() // once only
	assert.EqualValues(t, 0, b.used.Load())
	appendTo(a, listItemJSON, "x")
	assert.EqualValues(t, 0, b.used.Load(), "released: not kept")

	appendTo(c, listItemProtobuf, "0123456789")
	assert.Equal(t, "<0123456789", appendTo(c, listItemProtobuf, "other"), "the kept copy, not the caller's buffer")
	assert.EqualValues(t, 10, b.used.Load())
	c.release()
	assert.EqualValues(t, 0, b.used.Load())

	// Lists asking at once wait for the one encoding.
	d, made := &encodings{budget: b}, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := d.appendTo(listItemJSON, nil, func(out []byte) ([]byte, error) { made++; return append(out, "x"...), nil })
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, 1, made)

	// An event's encodings, for its watchers, are made once and have no budget.
	ev := &encodings{}
	made = 0
	for range 2 {
		data, err := ev.get(listItemJSON, func() ([]byte, error) { made++; return make([]byte, 1000), nil })
		require.NoError(t, err)
		assert.Len(t, data, 1000)
	}
	assert.Equal(t, 1, made)
}

// A watch cache's items keep their encodings within the process's budget: lists are the same
// with none kept, some or all; an object that changes or goes gives its encodings' bytes back.
func TestWatchCacheKeepsEncodingsWithinBudget(t *testing.T) {
	h, ctx := testCachedH, context.Background()
	prev := itemBudget.max.Load()
	t.Cleanup(func() { SetItemEncodingBudget(prev) })
	ns := newNamespace(t)
	for i := range 20 {
		create(t, cmResource, ns, configMap(fmt.Sprintf("c%02d", i), map[string]string{"v": fmt.Sprint(i)}))
	}
	c := h.cache(cmResource)
	require.NoError(t, c.waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))
	// kept is the bytes the namespace's cached objects keep, and how many keep any.
	kept := func() (bytes int64, objects int) {
		t.Helper()
		tree, _, err := c.snapshot()
		require.NoError(t, err)
		tree.AscendGreaterOrEqual(cacheEntry{key: prefix(cmResource, ns)}, func(e cacheEntry) bool {
			if e.key >= prefix(cmResource, ns)+"\xff" {
				return false
			}
			e.enc.mu.Lock()
			defer e.enc.mu.Unlock()
			for _, enc := range e.enc.m {
				bytes += int64(len(enc.data))
			}
			if len(e.enc.m) > 0 {
				objects++
			}
			return true
		})
		return bytes, objects
	}
	list := func(accept string) []byte {
		t.Helper()
		stream := &listStream{ctx: ctx}
		require.NoError(t, h.StreamList(&resourcev1.StreamListRequest{List: &resourcev1.ListRequest{Ref: ref(cmResource, ns, ""), Encoding: &resourcev1.Encoding{Accept: accept}}}, stream))
		return stream.data()
	}

	SetItemEncodingBudget(0)
	json, proto := list(""), list(MediaProtobuf)
	_, objects := kept()
	assert.Zero(t, objects, "a budget of 0 keeps nothing")

	// Room for about half the items' JSON (each is over 100 bytes): some are kept, the lists
	// are the same.
	used := itemBudget.used.Load()
	SetItemEncodingBudget(used + 10*100)
	assert.Equal(t, string(json), string(list("")))
	bytes, objects := kept()
	assert.Positive(t, objects)
	assert.Less(t, objects, 20)
	assert.LessOrEqual(t, itemBudget.used.Load(), used+10*100)
	assert.Equal(t, used+bytes, itemBudget.used.Load())

	SetItemEncodingBudget(1 << 40)
	assert.Equal(t, string(json), string(list("")))
	assert.Equal(t, string(proto), string(list(MediaProtobuf)))
	bytes, objects = kept()
	assert.Equal(t, 20, objects)
	assert.Equal(t, used+bytes, itemBudget.used.Load(), "the budget counts what the items keep")

	// An update and a delete give their objects' bytes back.
	_, err := patch(cmResource, ns, "c00", mergePatchType, `{"data":{"v":"changed"}}`)
	require.NoError(t, err)
	_, err = testH.Delete(ctx, deleteReq(cmResource, ns, "c01", nil))
	require.NoError(t, err)
	require.NoError(t, c.waitFresh(ctx, uint64(currentRevision(t)), 5*time.Second))
	bytes, objects = kept()
	assert.Equal(t, 18, objects)
	assert.Equal(t, used+bytes, itemBudget.used.Load())
}
