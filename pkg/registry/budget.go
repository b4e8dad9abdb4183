package registry

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/resource"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// DefaultItemEncodingBudget is how many bytes of list items' encodings a process's watch
// caches keep, unless set otherwise (SetItemEncodingBudget).
var DefaultItemEncodingBudget = resource.MustParse("64Mi")

// itemBudget is the process's budget for the encodings its watch caches keep with their
// objects, so that a list encodes each item once for every list after it. kube-apiserver
// keeps none and encodes every item of every list; a budget keeps the lists most asked for
// fast while the memory they cost stays bounded, however many objects there are. It is the
// process's, not a handler's: the all-in-one's three backends share one.
var itemBudget = &encodingBudget{}

func init() { itemBudget.max.Store(DefaultItemEncodingBudget.Value()) }

// SetItemEncodingBudget sets the bytes of list items' encodings the process's watch caches
// may keep (0: none, every list encodes its items as kube's does). Encodings kept already
// stay until their objects change.
func SetItemEncodingBudget(bytes int64) { itemBudget.max.Store(max(bytes, 0)) }

// encodingBudget counts the bytes of the encodings kept against its max. An encoding that
// does not fit is used and not kept.
type encodingBudget struct {
	max, used atomic.Int64
}

// take reserves n bytes, reporting whether they fit.
func (b *encodingBudget) take(n int64) bool {
	if b.used.Add(n) > b.max.Load() {
		b.used.Add(-n)
		return false
	}
	itemEncodingBytes.Set(float64(b.used.Load()))
	return true
}

func (b *encodingBudget) give(n int64) {
	if n != 0 {
		itemEncodingBytes.Set(float64(b.used.Add(-n)))
	}
}

var itemEncodingBytes = compbasemetrics.NewGauge(&compbasemetrics.GaugeOpts{
	Name:           "apichain_watch_cache_item_encoding_bytes",
	Help:           "Bytes of list items' encodings the process's watch caches keep with their objects (bounded by --watch-cache-encoding-budget).",
	StabilityLevel: compbasemetrics.ALPHA,
})

func init() { legacyregistry.MustRegister(itemEncodingBytes) }
