package apiregistration

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group.
const GroupName = "apiregistration.k8s.io"

// SchemeGroupVersion is the only version served.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers the types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &APIService{}, &APIServiceList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// APIService says which server serves a group/version: a local one (no service) or the
// Service in front of an aggregated API server.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   APIServiceSpec   `json:"spec,omitempty"`
	Status APIServiceStatus `json:"status,omitempty"`
}

// APIServiceList is a list of APIServices.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []APIService `json:"items"`
}

// APIServiceSpec is where a group/version is served and how it ranks in discovery.
type APIServiceSpec struct {
	// Service is nil for a group/version the API server serves itself.
	Service *ServiceReference `json:"service,omitempty"`
	Group   string            `json:"group,omitempty"`
	Version string            `json:"version,omitempty"`
	// InsecureSkipTLSVerify skips verifying the server's certificate (discouraged).
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// CABundle is the PEM of the CAs that sign the server's certificate.
	// +listType=atomic
	CABundle []byte `json:"caBundle,omitempty"`
	// GroupPriorityMinimum ranks the group (the highest of its versions' wins).
	GroupPriorityMinimum int32 `json:"groupPriorityMinimum"`
	// VersionPriority ranks the version within its group.
	VersionPriority int32 `json:"versionPriority"`
}

// ServiceReference names a Service.
type ServiceReference struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Port defaults to 443.
	Port *int32 `json:"port,omitempty"`
}

// APIServiceStatus holds the conditions.
type APIServiceStatus struct {
	// +listType=map
	// +listMapKey=type
	Conditions []APIServiceCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// APIServiceConditionType names a condition.
type APIServiceConditionType string

// Available says the server answers for the group/version.
const Available APIServiceConditionType = "Available"

// APIServiceCondition is one condition of an APIService.
type APIServiceCondition struct {
	Type               APIServiceConditionType `json:"type"`
	Status             ConditionStatus         `json:"status"`
	LastTransitionTime metav1.Time             `json:"lastTransitionTime,omitempty"`
	Reason             string                  `json:"reason,omitempty"`
	Message            string                  `json:"message,omitempty"`
}

// AvailableCondition returns the Available condition, or nil.
func (s *APIServiceStatus) AvailableCondition() *APIServiceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == Available {
			return &s.Conditions[i]
		}
	}
	return nil
}

// The OpenAPI model names are kube's.
const modelPrefix = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1."

// OpenAPIModelName is kube's name of the definition.
func (APIService) OpenAPIModelName() string { return modelPrefix + "APIService" }

// OpenAPIModelName is kube's name of the definition.
func (APIServiceList) OpenAPIModelName() string { return modelPrefix + "APIServiceList" }

// OpenAPIModelName is kube's name of the definition.
func (APIServiceSpec) OpenAPIModelName() string { return modelPrefix + "APIServiceSpec" }

// OpenAPIModelName is kube's name of the definition.
func (ServiceReference) OpenAPIModelName() string { return modelPrefix + "ServiceReference" }

// OpenAPIModelName is kube's name of the definition.
func (APIServiceStatus) OpenAPIModelName() string { return modelPrefix + "APIServiceStatus" }

// OpenAPIModelName is kube's name of the definition.
func (APIServiceCondition) OpenAPIModelName() string { return modelPrefix + "APIServiceCondition" }

// SwaggerDoc describes the fields for kubectl explain.
func (APIService) SwaggerDoc() map[string]string {
	return map[string]string{
		"":       "APIService says which server serves a group/version: the API server itself, or an aggregated API server behind a Service.",
		"spec":   "Spec says where the group/version is served and how it ranks in discovery.",
		"status": "Status says whether the server answers.",
	}
}

// SwaggerDoc describes the fields for kubectl explain.
func (APIServiceSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                      "APIServiceSpec says where a group/version is served. A local one has no service.",
		"service":               "Service is the Service in front of the aggregated API server; none for a group/version the API server serves itself.",
		"group":                 "Group is the API group served.",
		"version":               "Version is the API version served.",
		"insecureSkipTLSVerify": "InsecureSkipTLSVerify skips verifying the aggregated server's certificate. Discouraged: use caBundle.",
		"caBundle":              "CABundle is the PEM bundle of CAs that sign the aggregated server's serving certificate.",
		"groupPriorityMinimum":  "GroupPriorityMinimum ranks the group in discovery: groups are ordered by the highest minimum among their versions, highest first (kube's own groups range from 15000 to 18000).",
		"versionPriority":       "VersionPriority ranks the version within its group, highest first; equal priorities are ordered by kube's version order (v10 before v2, GA before beta before alpha).",
	}
}

// SwaggerDoc describes the fields for kubectl explain.
func (ServiceReference) SwaggerDoc() map[string]string {
	return map[string]string{
		"":          "ServiceReference names a Service.",
		"namespace": "Namespace is the Service's namespace.",
		"name":      "Name is the Service's name.",
		"port":      "Port is the Service port that serves HTTPS (443 if unset).",
	}
}

// SwaggerDoc describes the fields for kubectl explain.
func (APIServiceStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "APIServiceStatus says how the APIService is doing.",
		"conditions": "Conditions of the APIService (Available).",
	}
}

// SwaggerDoc describes the fields for kubectl explain.
func (APIServiceCondition) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "APIServiceCondition is one condition of an APIService.",
		"type":               "Type of the condition: Available.",
		"status":             "Status is True, False or Unknown.",
		"lastTransitionTime": "LastTransitionTime is when the status last changed.",
		"reason":             "Reason is a CamelCase word saying why the status is what it is.",
		"message":            "Message says the same for people.",
	}
}

// SwaggerDoc describes the fields for kubectl explain.
func (APIServiceList) SwaggerDoc() map[string]string {
	return map[string]string{
		"":      "APIServiceList is a list of APIServices.",
		"items": "Items are the APIServices.",
	}
}
