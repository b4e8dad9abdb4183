package apiregistration

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies s into out.
func (s *ServiceReference) DeepCopyInto(out *ServiceReference) {
	*out = *s
	if s.Port != nil {
		p := *s.Port
		out.Port = &p
	}
}

// DeepCopyInto copies s into out.
func (s *APIServiceSpec) DeepCopyInto(out *APIServiceSpec) {
	*out = *s
	if s.Service != nil {
		out.Service = new(ServiceReference)
		s.Service.DeepCopyInto(out.Service)
	}
	if s.CABundle != nil {
		out.CABundle = append([]byte(nil), s.CABundle...)
	}
}

// DeepCopyInto copies s into out.
func (s *APIServiceStatus) DeepCopyInto(out *APIServiceStatus) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]APIServiceCondition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies c into out.
func (c *APIServiceCondition) DeepCopyInto(out *APIServiceCondition) {
	*out = *c
	c.LastTransitionTime.DeepCopyInto(&out.LastTransitionTime)
}

// DeepCopyInto copies a into out.
func (a *APIService) DeepCopyInto(out *APIService) {
	*out = *a
	a.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	a.Spec.DeepCopyInto(&out.Spec)
	a.Status.DeepCopyInto(&out.Status)
}

// DeepCopy copies a.
func (a *APIService) DeepCopy() *APIService {
	if a == nil {
		return nil
	}
	out := new(APIService)
	a.DeepCopyInto(out)
	return out
}

// DeepCopyObject copies a.
func (a *APIService) DeepCopyObject() runtime.Object {
	if c := a.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies l into out.
func (l *APIServiceList) DeepCopyInto(out *APIServiceList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]APIService, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy copies l.
func (l *APIServiceList) DeepCopy() *APIServiceList {
	if l == nil {
		return nil
	}
	out := new(APIServiceList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject copies l.
func (l *APIServiceList) DeepCopyObject() runtime.Object {
	if c := l.DeepCopy(); c != nil {
		return c
	}
	return nil
}
