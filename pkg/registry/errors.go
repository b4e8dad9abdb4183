package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storeError turns a store error about name into kube's Status error.
func storeError(err error, gr schema.GroupResource, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("too old resource version")
	case errors.Is(err, storage.ErrFutureRV):
		return apierrors.NewTimeoutError("Too large resource version", 1)
	case errors.Is(err, storage.ErrUnavailable): // nothing was written: try again
		st := apierrors.NewServiceUnavailable(err.Error())
		st.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return st
	case errors.Is(err, storage.ErrOutcomeUnknown):
		return apierrors.NewTimeoutError(err.Error(), 1)
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	}
	return asStatus(err)
}

// asStatus is err if it is an API status already (a conversion webhook's failure is kube's
// answer as it is), else a 500 InternalError.
func asStatus(err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewInternalError(err)
}

// resourceVersionTooHighRetrySeconds is when kube's watch cache tells a client to retry a
// read at a version it has not reached yet.
const resourceVersionTooHighRetrySeconds = 1

// tooLargeResourceVersion is kube's storage.NewTooLargeResourceVersionError: a 504 Timeout
// whose cause tells clients (client-go's reflector among them) the version is ahead of the
// server rather than the request slow.
func tooLargeResourceVersion(minimum, current uint64, retrySeconds int) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", minimum, current), retrySeconds)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// toGRPC turns any error into the gRPC status carrying its kube Status.
func toGRPC(err error) error {
	if err == nil {
		return nil
	}
	if rpcstatus.IsNotServed(err) {
		return err
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		if st.Kind == "" {
			st.Kind, st.APIVersion = "Status", "v1"
		}
		return rpcstatus.FromKube(&st)
	}
	return rpcstatus.FromKube(rpcstatus.NewStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		fmt.Sprintf("Internal error occurred: %v", err)))
}

// corruptObject is kube's storage error for a stored object that does not decode (or convert
// to the version asked for: a conversion webhook's failure), under the object's key.
func corruptObject(key string, rev int64, err error) string {
	return fmt.Sprintf("StorageError: corrupt object, Code: 7, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=%d: %v", key, rev, err)
}

// maxCorruptInList is how many undecodable objects a list reports before it stops (kube's
// maxCorruptObjErrsToAggregate).
const maxCorruptInList = 100

// corruptList is kube's answer to a list with undecodable objects: a 500 StorageReadError
// naming the first, each one a cause under its key.
func corruptList(gr schema.GroupResource, keys, msgs []string, truncated bool) error {
	causes := make([]metav1.StatusCause, 0, len(msgs)+1)
	for i, m := range msgs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: keys[i], Message: m})
	}
	if truncated {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"})
	}
	message := fmt.Sprintf("failed to read one or more %s from the storage: %s", gr.String(), msgs[0])
	if len(msgs) > 1 {
		message = fmt.Sprintf("%s (and %d more)", message, len(msgs)-1)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonStoreReadError, Message: message,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "list", Causes: causes}}}
}

// unknownError is kube's answer to an error that is no API status (a conversion webhook's
// failure on a write): a 500 with its words and no reason.
func unknownError(err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
}
