package requestinfo

import (
	"path"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"k8s.io/apimachinery/pkg/fields"
)

// grpcVerbs are the ResourceService methods' kube verbs.
var grpcVerbs = map[string]string{"Get": "get", "List": "list", "StreamList": "list", "Watch": "watch", "Create": "create", "Update": "update",
	"Patch": "patch", "Delete": "delete", "DeleteCollection": "deletecollection"}

// grpcReads are the gRPC methods that read what a REST path serves: a client allowed to GET
// the path may call them. The lifecycle API is its transcoded route; health is readiness; server
// reflection is the gRPC API's schema, as /openapi/v3 is the REST API's (kube's
// system:discovery grants /openapi/* to every authenticated user, so grpcurl works for anyone
// signed in).
var grpcReads = map[string]string{
	lifecyclev1.LifecycleService_ListInstanceStates_FullMethodName:         "/debug/lifecycle/v1/instances",
	healthpb.Health_Check_FullMethodName:                                   "/readyz",
	healthpb.Health_List_FullMethodName:                                    "/readyz",
	healthpb.Health_Watch_FullMethodName:                                   "/readyz",
	reflectionpb.ServerReflection_ServerReflectionInfo_FullMethodName:      "/openapi/grpc",
	reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName: "/openapi/grpc",
}

// ResolveGRPC describes a gRPC call as the REST request it stands for, from its method and
// request message, so that authorization, priority and fairness and audit treat both
// protocols alike:
//   - a ResourceService call is the resource request its ResourceRef names, with its verb
//     (a Get without a name is a list, as GET on a collection is);
//   - DiscoveryService.GetDocument is a GET of the document's path;
//   - a call that reads what a REST path serves is a GET of that path;
//   - any other call (or a message of the wrong type) is what the HTTP resolver makes of it:
//     a non-resource POST to its method's path.
func ResolveGRPC(fullMethod string, msg any) *RequestInfo {
	if p, ok := grpcReads[fullMethod]; ok {
		return &RequestInfo{Path: p, Verb: "get"}
	}
	if fullMethod == discoveryv1.DiscoveryService_GetDocument_FullMethodName {
		if m, ok := msg.(*discoveryv1.GetDocumentRequest); ok {
			return &RequestInfo{Path: m.GetPath(), Verb: "get"}
		}
	}
	service, method := path.Split(fullMethod)
	if l, ok := msg.(*resourcev1.StreamListRequest); ok {
		msg = l.GetList() // a list's request, whose answer comes in pieces
	}
	m, isRef := msg.(interface {
		GetRef() *resourcev1.ResourceRef
	})
	verb, isResource := grpcVerbs[method]
	if !isRef || !isResource || service != "/"+resourcev1.ResourceService_ServiceDesc.ServiceName+"/" {
		return &RequestInfo{Path: fullMethod, Verb: "post"}
	}
	ref := m.GetRef()
	if verb == "get" && ref.GetName() == "" {
		verb = "list"
	}
	prefix := "apis"
	if ref.GetGroup() == "" {
		prefix = "api"
	}
	info := &RequestInfo{IsResourceRequest: true, Path: fullMethod, Verb: verb, APIPrefix: prefix, APIGroup: ref.GetGroup(),
		APIVersion: ref.GetVersion(), Namespace: ref.GetNamespace(), Resource: ref.GetResource(),
		Subresource: ref.GetSubresource(), Name: ref.GetName()}
	if !verbsWithSelectors[verb] {
		return info
	}
	var opts *resourcev1.ListOptions
	switch m := msg.(type) {
	case *resourcev1.ListRequest:
		opts = m.GetOptions()
	case *resourcev1.WatchRequest:
		opts = m.GetOptions()
	case *resourcev1.DeleteCollectionRequest:
		opts = m.GetListOptions()
	}
	info.FieldSelector, info.LabelSelector = opts.GetFieldSelector(), opts.GetLabelSelector()
	// As a GET of the collection with ?fieldSelector=metadata.name=x: one object's list or watch.
	if sel, err := fields.ParseSelector(info.FieldSelector); err == nil && info.Name == "" && verb != "deletecollection" {
		info.Name = nameFromFieldSelector(sel)
	}
	return info
}
