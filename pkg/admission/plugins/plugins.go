// Package plugins is kube-apiserver's choice of admission plugins: its
// --enable-admission-plugins and --disable-admission-plugins over its default set, with kube's
// plugin names and its checks of the flags. Every backend takes the flags; each runs the
// enabled plugins that apply to what it serves.
package plugins

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Kube's names of the plugins apichain has.
const (
	NamespaceLifecycle           = "NamespaceLifecycle"
	LimitRanger                  = "LimitRanger"
	ServiceAccount               = "ServiceAccount"
	PodSecurity                  = "PodSecurity"
	Priority                     = "Priority"
	DefaultTolerationSeconds     = "DefaultTolerationSeconds"
	DefaultStorageClass          = "DefaultStorageClass"
	StorageObjectInUseProtection = "StorageObjectInUseProtection"
	DefaultIngressClass          = "DefaultIngressClass"
	MutatingAdmissionPolicy      = "MutatingAdmissionPolicy"
	MutatingAdmissionWebhook     = "MutatingAdmissionWebhook"
	ValidatingAdmissionPolicy    = "ValidatingAdmissionPolicy"
	ValidatingAdmissionWebhook   = "ValidatingAdmissionWebhook"
	ResourceQuota                = "ResourceQuota"
)

// all are kube-apiserver 1.37's plugins in its order (k8s.io/kubernetes/pkg/kubeapiserver/options).
var all = []string{"AlwaysAdmit", "NamespaceAutoProvision", NamespaceLifecycle, "NamespaceExists",
	"LimitPodHardAntiAffinityTopology", LimitRanger, ServiceAccount, "NodeRestriction", "TaintNodesByCondition",
	"AlwaysPullImages", "ImagePolicyWebhook", PodSecurity, "PodNodeSelector", Priority, DefaultTolerationSeconds,
	"PodTolerationRestriction", "EventRateLimit", "ExtendedResourceToleration", DefaultStorageClass,
	StorageObjectInUseProtection, "PodGroupProtection", "OwnerReferencesPermissionEnforcement",
	"PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", DefaultIngressClass, "DenyServiceExternalIPs", "PodTopologyLabels",
	"PodGroupWorkloadExists", "NodeDeclaredFeatureValidator", "JobValidation", "PodResizeValidator",
	MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook,
	ResourceQuota, "AlwaysDeny"}

// defaultOn are the plugins kube-apiserver runs unless told otherwise.
var defaultOn = []string{NamespaceLifecycle, LimitRanger, ServiceAccount, DefaultStorageClass, "PersistentVolumeClaimResize",
	DefaultTolerationSeconds, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, ResourceQuota, StorageObjectInUseProtection,
	"PodGroupProtection", Priority, "TaintNodesByCondition", "RuntimeClass", "CertificateApproval", "CertificateSigning",
	"ClusterTrustBundleAttest", "CertificateSubjectRestriction", DefaultIngressClass, PodSecurity, "PodTopologyLabels",
	MutatingAdmissionPolicy, ValidatingAdmissionPolicy, "PodGroupWorkloadExists", "NodeDeclaredFeatureValidator",
	"JobValidation", "PodResizeValidator"}

// implemented are the plugins apichain runs. Kube's other default plugins are known
// differences (docs/compatibility.md); asking for one of kube's plugins that is off by default
// and that apichain lacks fails at start rather than admit what it would refuse.
var implemented = []string{NamespaceLifecycle, LimitRanger, ServiceAccount, PodSecurity, Priority, DefaultTolerationSeconds,
	DefaultStorageClass, StorageObjectInUseProtection, DefaultIngressClass, MutatingAdmissionPolicy, MutatingAdmissionWebhook,
	ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, ResourceQuota}

// Options are the admission plugin flags.
type Options struct {
	Enable, Disable []string
}

// AddFlags registers kube's flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Enable, "enable-admission-plugins", o.Enable, "admission plugins that should be enabled in addition to default enabled ones ("+
		strings.Join(defaultOn, ", ")+"). Comma-delimited list of admission plugins: "+strings.Join(all, ", ")+". The order of plugins in this flag does not matter.")
	fs.StringSliceVar(&o.Disable, "disable-admission-plugins", o.Disable, "admission plugins that should be disabled although they are in the default enabled plugins list. The order of plugins in this flag does not matter.")
}

// Validate is kube's check of the flags (its words), and apichain's that it has what is asked for.
func (o *Options) Validate() error {
	var errs []error
	for _, name := range o.Enable {
		if !slices.Contains(all, name) {
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is unknown", name))
		} else if !slices.Contains(implemented, name) && !slices.Contains(defaultOn, name) {
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is not implemented by apichain", name))
		}
	}
	for _, name := range o.Disable {
		if !slices.Contains(all, name) {
			errs = append(errs, fmt.Errorf("disable-admission-plugins plugin %q is unknown", name))
		}
	}
	var both []string
	for _, name := range o.Enable {
		if slices.Contains(o.Disable, name) && !slices.Contains(both, name) {
			both = append(both, name)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	return errors.Join(errs...)
}

// Enabled reports whether the plugin named name runs: on by default or enabled, and not
// disabled.
func (o *Options) Enabled(name string) bool {
	if o == nil {
		return slices.Contains(defaultOn, name)
	}
	return (slices.Contains(defaultOn, name) || slices.Contains(o.Enable, name)) && !slices.Contains(o.Disable, name)
}
