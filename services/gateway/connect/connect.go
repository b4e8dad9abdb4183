// Package connect answers the connecting subresources kube proxies to kubelets and cluster
// networks: a pod's log, exec, attach, portforward and proxy, and a node's or service's proxy.
// apichain runs no kubelet connection, so each answers what kube answers before it would
// connect (the object is missing, the pod has no node or no address, the node is missing, the
// service has no endpoints) and otherwise says plainly that it does not connect.
package connect

import (
	"context"
	"fmt"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/informer"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/services/gateway/filters"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Is reports whether the request is for one of the connecting subresources.
func Is(info *requestinfo.RequestInfo) bool {
	if info == nil || !info.IsResourceRequest || info.APIGroup != "" || info.APIVersion != "v1" || info.Name == "" {
		return false
	}
	switch info.Resource + "/" + info.Subresource {
	case "pods/log", "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "nodes/proxy", "services/proxy":
		return true
	}
	return false
}

// Handler answers the connecting subresources.
type Handler struct{ Objects informer.Getter }

func (h *Handler) read(ctx context.Context, resource, namespace, name string, out any) error {
	return informer.GetJSON(ctx, h.Objects, &resourcev1.ResourceRef{Version: "v1", Resource: resource, Namespace: namespace, Name: name}, out)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, _ := requestinfo.From(r.Context())
	if err := h.serve(w, r, info); err != nil {
		st := apierrors.NewInternalError(err).ErrStatus
		if s, ok := err.(apierrors.APIStatus); ok {
			st = s.Status()
		}
		filters.WriteStatus(w, &st)
	}
}

// noConnection is the answer when kube would now open a connection apichain does not make.
func noConnection(what string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("apichain does not connect to %s: no kubelet or cluster network is reachable from the API server", what))
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, info *requestinfo.RequestInfo) error {
	ctx := r.Context()
	switch info.Resource {
	case "nodes":
		node := &corev1.Node{}
		if err := h.read(ctx, "nodes", "", info.Name, node); err != nil {
			return err
		}
		return noConnection(fmt.Sprintf("node %q", info.Name))
	case "services":
		svc := &corev1.Service{}
		if err := h.read(ctx, "services", info.Namespace, info.Name, svc); err != nil {
			return err
		}
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", info.Name))
	}
	pod := &corev1.Pod{}
	if err := h.read(ctx, "pods", info.Namespace, info.Name, pod); err != nil {
		return err
	}
	switch info.Subresource {
	case "proxy":
		if pod.Status.PodIP == "" {
			return apierrors.NewBadRequest("address not allowed")
		}
		return noConnection(fmt.Sprintf("pod %q", pod.Name))
	case "log":
		if pod.Spec.NodeName == "" { // nothing ran: an empty log, as kube answers
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			return nil
		}
	default: // exec, attach, portforward
		if pod.Spec.NodeName == "" {
			return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
		}
	}
	if err := h.read(ctx, "nodes", "", pod.Spec.NodeName, &corev1.Node{}); apierrors.IsNotFound(err) {
		// kube's kubelet lookup reports the missing node under the pods resource
		return apierrors.NewNotFound(corev1.Resource("pods"), pod.Spec.NodeName)
	} else if err != nil {
		return err
	}
	return noConnection(fmt.Sprintf("the kubelet of node %q", pod.Spec.NodeName))
}
