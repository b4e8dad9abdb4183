package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// The controllers apichain runs that kube-controller-manager runs in a cluster, by kube's
// names (and the older names kube still takes). A bare kube-apiserver, as envtest runs it,
// runs none of them.
const (
	GarbageCollector       = "garbage-collector-controller"
	Namespace              = "namespace-controller"
	ServiceAccount         = "serviceaccount-controller"
	RootCACertPublisher    = "root-ca-certificate-publisher-controller"
	ClusterRoleAggregation = "clusterrole-aggregation-controller"
	ResourceQuota          = "resourcequota-controller"
	PodGarbageCollector    = "pod-garbage-collector-controller"
	PVCProtection          = "persistentvolumeclaim-protection-controller"
	PVProtection           = "persistentvolume-protection-controller"
	ValidatingPolicyStatus = "validatingadmissionpolicy-status-controller"
)

// aliases are kube-controller-manager's older names of the same controllers.
var aliases = map[string]string{
	"garbagecollector": GarbageCollector, "namespace": Namespace, "serviceaccount": ServiceAccount,
	"root-ca-cert-publisher": RootCACertPublisher, "clusterrole-aggregation": ClusterRoleAggregation,
	"resourcequota": ResourceQuota, "podgc": PodGarbageCollector, "pvc-protection": PVCProtection,
	"pv-protection": PVProtection, "validatingadmissionpolicy-status": ValidatingPolicyStatus,
}

var known = []string{GarbageCollector, Namespace, ServiceAccount, RootCACertPublisher, ClusterRoleAggregation,
	ResourceQuota, PodGarbageCollector, PVCProtection, PVProtection, ValidatingPolicyStatus}

// Selection is kube-controller-manager's --controllers: "*" turns on the controllers that are
// on by default (all of apichain's), "name" turns one on, "-name" turns one off; an empty list
// runs none.
type Selection []string

// AddSelectionFlag registers --controllers on fs.
func AddSelectionFlag(fs *pflag.FlagSet, s *Selection) {
	if *s == nil {
		*s = Selection{"*"}
	}
	fs.StringSliceVar((*[]string)(s), "controllers", *s, "A list of controllers to enable, as kube-controller-manager takes it. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables the controller named 'foo'. An empty list (--controllers=) runs none, as a bare kube-apiserver.\nAll controllers: "+strings.Join(known, ", "))
}

// Validate refuses names of controllers apichain does not run.
func (s Selection) Validate() error {
	var errs []error
	for _, c := range s {
		name := strings.TrimPrefix(c, "-")
		if c == "*" || slices.Contains(known, canonical(name)) {
			continue
		}
		errs = append(errs, fmt.Errorf("%q is not in the list of known controllers (apichain runs %s)", name, strings.Join(known, ", ")))
	}
	return errors.Join(errs...)
}

// Enabled reports whether the controller named name runs, as kube-controller-manager decides.
func (s Selection) Enabled(name string) bool {
	star := s == nil
	for _, c := range s {
		switch {
		case canonical(c) == name:
			return true
		case strings.HasPrefix(c, "-") && canonical(c[1:]) == name:
			return false
		case c == "*":
			star = true
		}
	}
	return star
}

func canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}
