// Package storage is the storage.k8s.io/v1 group as core serves it: StorageClasses, CSIDrivers,
// VolumeAttributesClasses, CSIStorageCapacities, CSINodes and VolumeAttachments.
package storage

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{storageClasses(), csiDrivers(), volumeAttributesClasses(), csiStorageCapacities(), csiNodes(), volumeAttachments()}
}
