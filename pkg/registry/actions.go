package registry

import (
	"context"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An Action is a create served by a function instead of storage: a subresource such as a
// pod's binding or eviction, or (under the name "") a resource that stores nothing, such as
// v1 bindings. The body is decoded as New returns it; Do gets a client of the handler's objects
// (in dry-run mode when the request is one) and returns the response object and status code.
type Action struct {
	Kind schema.GroupVersionKind
	New  func() runtime.Object
	Do   func(ctx context.Context, c *Client, namespace, name string, body runtime.Object) (runtime.Object, int, error)
}

// createAction serves a create on one of r's actions.
func (h *Handler) createAction(ctx context.Context, r *Resource, a *Action, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	body := a.New()
	if len(req.GetBody().GetData()) == 0 {
		return nil, apierrors.NewBadRequest("the body of the request is empty")
	}
	if err := h.scheme.decode(req.GetBody().GetData(), req.GetBody().GetContentType(), body, a.Kind, req.GetOptions().GetFieldValidation() == "Strict"); err != nil {
		return nil, err
	}
	c := &Client{h: h, dryRun: isDryRun(req.GetOptions().GetDryRun())}
	out, code, err := a.Do(ctx, c, req.GetRef().GetNamespace(), req.GetRef().GetName(), body)
	if err != nil {
		return nil, err
	}
	o, err := negotiate(req.GetEncoding().GetAccept(), req.GetEncoding().GetPretty(), false)
	if err != nil {
		return nil, err
	}
	data, err := h.scheme.encode(out, a.Kind.GroupVersion(), o)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &resourcev1.CreateResponse{Body: &resourcev1.Body{ContentType: o.contentType(), Data: data}, Code: int32(code)}, nil
}

// StatusSuccess is the Status kube answers an action that has no object to return.
func StatusSuccess(code int) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
}

// methodNotAllowed is kube's answer to a verb a resource does not serve.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed,
		Reason: metav1.StatusReasonMethodNotAllowed, Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{}}}
}
