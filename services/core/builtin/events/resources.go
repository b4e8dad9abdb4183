// Package events is the events.k8s.io/v1 group as core serves it: Events, stored as core/v1
// Events (kube keeps both versions in one storage), so either API reads what the other wrote.
package events

import (
	"fmt"
	"strings"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/core"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Resources are the group's resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{GroupVersion: eventsv1.SchemeGroupVersion, Name: "events", SingularName: "event", Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, New: registry.Of[eventsv1.Event](), NewList: registry.Of[eventsv1.EventList](),
		Convert: &registry.Conversion{Stored: corev1.SchemeGroupVersion, NewStored: registry.Of[corev1.Event](),
			ToStored:   func(o runtime.Object) runtime.Object { return toCore(o.(*eventsv1.Event)) },
			FromStored: func(o runtime.Object) runtime.Object { return fromCore(o.(*corev1.Event)) }},
		FieldLabels:          func(o runtime.Object) fields.Set { return core.EventFields(toCore(o.(*eventsv1.Event))) },
		FieldLabelConversion: fieldLabelConversion}}
}

// fieldLabelConversion is kube's for events.k8s.io/v1: regarding.* and reportingController are
// the core Event's involvedObject.* and reportingComponent; the rest keep their names.
func fieldLabelConversion(label, value string) (string, string, error) {
	if rest, ok := strings.CutPrefix(label, "regarding."); ok {
		switch rest {
		case "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath":
			return "involvedObject." + rest, value, nil
		}
	}
	switch label {
	case "reportingController":
		return "reportingComponent", value, nil
	case "reason", "type", "source", "metadata.namespace", "metadata.name":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

// toCore and fromCore are kube's conversions between events.k8s.io/v1 and core Events.
func toCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: e.ObjectMeta,
		InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note, Source: e.DeprecatedSource,
		FirstTimestamp: e.DeprecatedFirstTimestamp, LastTimestamp: e.DeprecatedLastTimestamp, Count: e.DeprecatedCount,
		Type: e.Type, EventTime: e.EventTime, Action: e.Action, Related: e.Related,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance}
	if s := e.Series; s != nil {
		out.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

func fromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{TypeMeta: metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"}, ObjectMeta: e.ObjectMeta,
		Regarding: e.InvolvedObject, Reason: e.Reason, Note: e.Message, DeprecatedSource: e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp, DeprecatedLastTimestamp: e.LastTimestamp, DeprecatedCount: e.Count,
		Type: e.Type, EventTime: e.EventTime, Action: e.Action, Related: e.Related,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance}
	if s := e.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}
