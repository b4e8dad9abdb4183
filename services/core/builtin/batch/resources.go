// Package batch is the batch/v1 group as core serves it: Jobs and CronJobs.
package batch

import (
	"github.com/apichain/apichain/pkg/registry"
)

// Resources are the group's resources in kube's order.
func Resources() []*registry.Resource {
	return []*registry.Resource{jobs(), cronJobs()}
}
