package backend

import (
	"context"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
)

// NotServedResources answers every resource request with "not served", so the gateway
// moves on to the next delegate. It is the default until a service installs its resources.
type NotServedResources struct {
	resourcev1.UnimplementedResourceServiceServer
}

var _ resourcev1.ResourceServiceServer = NotServedResources{}

func refString(r *resourcev1.ResourceRef) string {
	return discovery.GroupVersion(r.GetGroup(), r.GetVersion()) + "/" + r.GetResource()
}

func (NotServedResources) Get(_ context.Context, r *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) List(_ context.Context, r *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) StreamList(r *resourcev1.StreamListRequest, _ grpc.ServerStreamingServer[resourcev1.StreamListResponse]) error {
	return rpcstatus.NotServed(refString(r.GetList().GetRef()))
}
func (NotServedResources) Watch(r *resourcev1.WatchRequest, _ grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	return rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) Create(_ context.Context, r *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) Update(_ context.Context, r *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) Patch(_ context.Context, r *resourcev1.PatchRequest) (*resourcev1.PatchResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) Delete(_ context.Context, r *resourcev1.DeleteRequest) (*resourcev1.DeleteResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
func (NotServedResources) DeleteCollection(_ context.Context, r *resourcev1.DeleteCollectionRequest) (*resourcev1.DeleteCollectionResponse, error) {
	return nil, rpcstatus.NotServed(refString(r.GetRef()))
}
