package proxy

import (
	"path"
	"strings"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/requestinfo"
)

// grpcVerbs are the ResourceService methods' kube verbs.
var grpcVerbs = map[string]string{"Get": "get", "List": "list", "Watch": "watch", "Create": "create", "Update": "update",
	"Patch": "patch", "Delete": "delete", "DeleteCollection": "deletecollection"}

// GRPCRequestInfo is the request info of a ResourceService call, read from its message as
// the REST path is read for a REST request; nil for other services' calls.
func GRPCRequestInfo(fullMethod string, msg any) *requestinfo.RequestInfo {
	service, method := path.Split(fullMethod)
	verb, ok := grpcVerbs[method]
	if !ok || strings.Trim(service, "/") != resourcev1.ResourceService_ServiceDesc.ServiceName {
		return nil
	}
	m, ok := msg.(interface {
		GetRef() *resourcev1.ResourceRef
	})
	if !ok {
		return nil
	}
	ref := m.GetRef()
	if verb == "get" && ref.GetName() == "" {
		verb = "list"
	}
	return &requestinfo.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: ref.GetGroup(), APIVersion: ref.GetVersion(),
		Resource: ref.GetResource(), Subresource: ref.GetSubresource(), Namespace: ref.GetNamespace(), Name: ref.GetName(),
		Path: fullMethod}
}
