package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors for etcd's unavailability that outlasted the request; the registry answers them
// with 503 and 504 and a Retry-After, so clients try again.
var (
	// ErrUnavailable: etcd did not answer in time, and nothing was written.
	ErrUnavailable = errors.New("etcd is unavailable")
	// ErrOutcomeUnknown: etcd lost a write's answer, and whether the write happened could
	// not be learned in time.
	ErrOutcomeUnknown = errors.New("etcd lost the answer to a write, and whether it happened could not be learned in time")
)

const (
	// maxRetryTime bounds the retries of a request without a deadline.
	maxRetryTime = 30 * time.Second
	// answerMargin is kept before a request's deadline to answer it.
	answerMargin = time.Second
	// maxBackoff caps the wait between two tries.
	maxBackoff = time.Second
)

// retrier paces the tries of one request while etcd is unavailable (its leader lost or
// changing, a member gone), until the request's deadline.
type retrier struct {
	ctx     context.Context
	until   time.Time
	attempt int
}

func newRetrier(ctx context.Context) *retrier {
	until := time.Now().Add(maxRetryTime)
	if d, ok := ctx.Deadline(); ok && d.Add(-answerMargin).Before(until) {
		until = d.Add(-answerMargin)
	}
	return &retrier{ctx: ctx, until: until}
}

// try runs one try under the retries' deadline, so that a try that hangs (etcd's client
// waits for a connection to be ready) still leaves time to answer. A request with less time
// than that gets one try with all of it.
func (r *retrier) try(op func(context.Context) error) error {
	if !r.until.After(time.Now()) {
		return op(r.ctx)
	}
	ctx, cancel := context.WithDeadline(r.ctx, r.until)
	defer cancel()
	return op(ctx)
}

// again reports whether err is etcd's unavailability and there is time to try again, after
// waiting out the backoff.
func (r *retrier) again(err error) bool {
	if !transient(r.ctx, err) {
		return false
	}
	wait := min(50*time.Millisecond<<r.attempt, maxBackoff)
	r.attempt++
	if time.Now().Add(wait).After(r.until) {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// fail is the error for err once no more tries are made; written says a write may have
// happened.
func fail(ctx context.Context, err error, written bool) error {
	switch {
	case err == nil:
		return nil
	case !transient(ctx, err):
		return mapErr(err)
	case written:
		return fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
	default:
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
}

// transient reports whether err is etcd's unavailability (another try may succeed) rather
// than an answer or the caller's own end.
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if st, ok := status.FromError(err); ok {
		code = st.Code()
	} else if errors.Is(err, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// notWritten reports an unavailability that etcd answers before proposing a write, or a
// request that never left: the write did not happen.
func notWritten(err error) bool {
	if errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTooManyRequests) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"Error while dialing", "connection refused", "there is no address available", "there is no connection available"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// read runs op until etcd answers it, or fails otherwise than by being unavailable, or
// time is up. Reads change nothing, so trying again is always safe.
func read[T any](ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	r := newRetrier(ctx)
	for {
		var v T
		err := r.try(func(ctx context.Context) (err error) { v, err = op(ctx); return err })
		if err == nil || !r.again(err) {
			return v, fail(ctx, err, false)
		}
	}
}

// write commits a conditional write until etcd answers it; settle turns the answer into the
// result. lost tells settle that an earlier try's answer was lost, so a failed condition
// may be that try's own write: settle then finds out from etcd whether it was.
func write(ctx context.Context, txn func(context.Context) clientv3.Txn, settle func(resp *clientv3.TxnResponse, lost bool) (int64, error)) (int64, error) {
	r := newRetrier(ctx)
	lost := false
	for {
		var resp *clientv3.TxnResponse
		err := r.try(func(ctx context.Context) (err error) { resp, err = txn(ctx).Commit(); return err })
		if err == nil {
			return settle(resp, lost)
		}
		lost = lost || !notWritten(err)
		if !r.again(err) {
			return 0, fail(ctx, err, lost)
		}
	}
}
