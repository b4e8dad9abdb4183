package registry

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/require"
)

// BenchmarkWatchFanOut is one create delivered to every watcher of a namespace's ConfigMaps
// through the watch cache (protobuf, as client-go watches built-in kinds): per op, the time
// until all have it; p50 and p99 of the deliveries, from the start of the create.
func BenchmarkWatchFanOut(b *testing.B) {
	for _, watchers := range []int{50, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			ns := newNamespace(b)
			// The cache serves the watches: started and synced first.
			require.Eventually(b, func() bool {
				_, _, err := testCachedH.cache(cmResource).snapshot()
				return err == nil
			}, 30*time.Second, 10*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			var started atomic.Int64 // the current create's start, in ns since the epoch
			delivered := make(chan time.Duration, watchers)
			var wg sync.WaitGroup
			for range watchers {
				stream := &fakeWatchStream{ctx: ctx, ch: make(chan *resourcev1.WatchResponse, 64)}
				wg.Add(2)
				go func() {
					defer wg.Done()
					_ = testCachedH.Watch(&resourcev1.WatchRequest{Ref: ref(cmResource, ns, ""), Options: &resourcev1.ListOptions{ResourceVersion: "0"},
						Encoding: &resourcev1.Encoding{Accept: MediaProtobuf}}, stream)
				}()
				go func() {
					defer wg.Done()
					for {
						select {
						case m := <-stream.ch:
							if m.GetType() == "ADDED" {
								delivered <- time.Since(time.Unix(0, started.Load()))
							}
						case <-ctx.Done():
							return
						}
					}
				}()
			}
			defer func() { cancel(); wg.Wait() }()
			require.Eventually(b, func() bool { return cacheWatchers(testCachedH, cmResource) >= watchers }, 30*time.Second, 10*time.Millisecond)

			var all []time.Duration
			i := 0
			for b.Loop() {
				started.Store(time.Now().UnixNano())
				create(b, cmResource, ns, configMap(fmt.Sprintf("cm-%d", i), map[string]string{"k": "v"}))
				i++
				for range watchers {
					all = append(all, <-delivered)
				}
			}
			slices.Sort(all)
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
