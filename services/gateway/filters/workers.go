package filters

import "sync"

// handlerWorkers are long-lived goroutines that run the handlers WithTimeout runs apart from
// the request's goroutine. A goroutine made per request starts with a small stack and copies
// it at every doubling on its way down the chain and the gRPC call below it (a seventeenth of
// the all-in-one's CPU under gets); a worker's stack stays grown between requests. When every
// worker is busy, a handler gets a goroutine of its own, as before.
type handlerWorkers struct {
	once sync.Once
	n    int
	ch   chan func()
}

// timeoutWorkers serve WithTimeout; started on first use, they live as long as the process.
var timeoutWorkers = &handlerWorkers{n: 32}

// Go runs f on an idle worker, or on a new goroutine if none is idle.
func (w *handlerWorkers) Go(f func()) {
	w.once.Do(func() {
		w.ch = make(chan func())
		for range w.n {
			go handlerWorker(w.ch)
		}
	})
	select {
	case w.ch <- f:
	default:
		go f()
	}
}

func handlerWorker(ch <-chan func()) {
	for f := range ch {
		f()
	}
}
