// Package autoscaling is the autoscaling group as core serves it: HorizontalPodAutoscalers,
// stored as v2 and served as v2 and v1 (with kube's conversion through annotations).
package autoscaling

import "github.com/apichain/apichain/pkg/registry"

// Resources are the group's resources, v2 first.
func Resources() []*registry.Resource {
	v2 := horizontalPodAutoscalers()
	return []*registry.Resource{v2, horizontalPodAutoscalersV1(v2)}
}
