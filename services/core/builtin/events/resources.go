// Package events is the events.k8s.io/v1 group as core serves it.
package events

import (
	"github.com/apichain/apichain/pkg/registry"
	eventsv1 "k8s.io/api/events/v1"
)

// Resources are the group's resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{GroupVersion: eventsv1.SchemeGroupVersion, Name: "events", SingularName: "event", Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, New: registry.Of[eventsv1.Event](), NewList: registry.Of[eventsv1.EventList]()}}
}
