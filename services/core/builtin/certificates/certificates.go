package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/user"
	"github.com/apichain/apichain/services/core/builtin/validate"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var csrUsages = []string{"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user",
	"key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping"}

// certificateSigningRequests are certificates.k8s.io/v1 CSRs: the requester recorded from the
// request's user, approval through the approval subresource, kube's validation and columns.
func certificateSigningRequests() *registry.Resource {
	return &registry.Resource{GroupVersion: certificatesv1.SchemeGroupVersion, Name: "certificatesigningrequests", SingularName: "certificatesigningrequest",
		Kind: "CertificateSigningRequest", ShortNames: []string{"csr"}, Subresources: []string{"approval", "status"}, HasSpec: true, NoGeneration: true,
		New: registry.Of[certificatesv1.CertificateSigningRequest](), NewList: registry.Of[certificatesv1.CertificateSigningRequestList](),
		PrepareForCreate: func(ctx context.Context, o runtime.Object) {
			csr := o.(*certificatesv1.CertificateSigningRequest)
			csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
			if u, ok := user.From(ctx); ok {
				csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Name, u.UID, u.Groups
				if len(u.Extra) > 0 {
					csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
					for k, v := range u.Extra {
						csr.Spec.Extra[k] = v
					}
				}
			}
			csr.Status = certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{}}
		},
		PrepareForUpdate: func(o, old runtime.Object) {
			csr := o.(*certificatesv1.CertificateSigningRequest)
			csr.Spec = old.(*certificatesv1.CertificateSigningRequest).Spec
			stampConditions(csr)
		},
		Merges: map[string]func(next, changed runtime.Object){"approval": func(next, changed runtime.Object) {
			csr := next.(*certificatesv1.CertificateSigningRequest)
			csr.Status.Conditions = changed.(*certificatesv1.CertificateSigningRequest).Status.Conditions
			stampConditions(csr)
		}},
		Validate: func(o runtime.Object) field.ErrorList {
			return validateCSR(o.(*certificatesv1.CertificateSigningRequest))
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			csr, prev := o.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
			var errs field.ErrorList
			// Approved and Denied, once set, stay.
			for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
				if hasCSRCondition(prev, t) && !hasCSRCondition(csr, t) {
					errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not remove a condition of type %q", t)))
				}
			}
			if len(prev.Status.Certificate) > 0 && !apiequality.Semantic.DeepEqual(csr.Status.Certificate, prev.Status.Certificate) {
				errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			registry.AgeColumn,
			registry.Column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
			registry.Column("Requestor", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]),
			registry.Column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
			registry.Column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
		},
		Cells: func(o runtime.Object) []any {
			csr := o.(*certificatesv1.CertificateSigningRequest)
			signer, requested := "<none>", "<none>"
			if csr.Spec.SignerName != "" {
				signer = csr.Spec.SignerName
			}
			if s := csr.Spec.ExpirationSeconds; s != nil {
				requested = duration.HumanDuration(time.Duration(*s) * time.Second)
			}
			return []any{registry.AgeCell(o), signer, csr.Spec.Username, requested, csrCondition(csr)}
		},
		FieldLabels: func(o runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": o.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		},
		FieldLabelConversion: registry.SupportedFieldLabels("metadata.name", "spec.signerName"),
	}
}

// stampConditions sets the times a client left unset on the conditions, as kube does.
func stampConditions(csr *certificatesv1.CertificateSigningRequest) {
	now := metav1.Now().Rfc3339Copy()
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
	}
}

func hasCSRCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// csrCondition is kubectl's CONDITION cell: Denied, Approved or Pending, then Failed and Issued.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	status := "Pending"
	switch {
	case hasCSRCondition(csr, certificatesv1.CertificateDenied):
		status = "Denied"
	case hasCSRCondition(csr, certificatesv1.CertificateApproved):
		status = "Approved"
	}
	if hasCSRCondition(csr, certificatesv1.CertificateFailed) {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if err := checkCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(p.Child("request"), string(csr.Spec.Request), err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(p.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !slices.Contains(csrUsages, string(u)) {
			errs = append(errs, field.NotSupported(p.Child("usages").Index(i), u, csrUsages))
		}
	}
	for i, u := range csr.Spec.Usages {
		if seen[u] {
			errs = append(errs, field.Duplicate(p.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == "kubernetes.io/legacy-unknown" {
		errs = append(errs, field.Invalid(p.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(p.Child("signerName"), csr.Spec.SignerName)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	cp := field.NewPath("status", "conditions")
	types := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range csr.Status.Conditions {
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Index(i).Child("type"), ""))
		}
		if types[c.Type] && (c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) {
			errs = append(errs, field.Duplicate(cp.Index(i).Child("type"), c.Type))
		}
		types[c.Type] = true
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			errs = append(errs, field.Required(cp.Index(i).Child("status"), ""))
		default:
			errs = append(errs, field.NotSupported(cp.Index(i).Child("status"), c.Status, []string{"False", "True", "Unknown"}))
		}
	}
	if types[certificatesv1.CertificateApproved] && types[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(cp, csr.Status.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(csr.Status.Certificate) > 0 && !types[certificatesv1.CertificateApproved] {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", "certificate can only be set if the Approved condition exists"))
	}
	return errs
}

// checkCSR parses a PEM-encoded PKCS#10 request and checks its signature.
func checkCSR(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// validateSignerName is kube's: a domain with at least two labels, "/", then a path.
func validateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, "", validation.DNS1123SubdomainMaxLength))
	}
	domain := strings.Split(segments[0], ".")
	for _, l := range domain {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, segments[0], fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if len(domain) < 2 {
		errs = append(errs, field.Invalid(p, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(segments[1], ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, segments[1], fmt.Sprintf("validating component %q: %s", l, msg)))
			}
			break
		}
	}
	return errs
}

// clusterTrustBundles are certificates.k8s.io/v1 ClusterTrustBundles.
func clusterTrustBundles() *registry.Resource {
	return &registry.Resource{GroupVersion: certificatesv1.SchemeGroupVersion, Name: "clustertrustbundles", SingularName: "clustertrustbundle",
		Kind: "ClusterTrustBundle", NoAgeColumn: true,
		New: registry.Of[certificatesv1.ClusterTrustBundle](), NewList: registry.Of[certificatesv1.ClusterTrustBundleList](),
		Convert: registry.StoredInVersion(certificatesv1beta1.SchemeGroupVersion, registry.Of[certificatesv1beta1.ClusterTrustBundle](),
			registry.Of[certificatesv1.ClusterTrustBundle]()), // kube 1.37 stores v1beta1
		FieldLabels: func(o runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": o.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
		},
		FieldLabelConversion: registry.SupportedFieldLabels("metadata.name", "spec.signerName"),
		ValidateName: func(name string, _ bool) []string {
			return nil // checked with the signer name in Validate
		},
		Validate: func(o runtime.Object) field.ErrorList {
			b := o.(*certificatesv1.ClusterTrustBundle)
			var errs field.ErrorList
			np := field.NewPath("metadata", "name")
			if b.Spec.SignerName == "" {
				if strings.Contains(b.Name, ":") {
					errs = append(errs, field.Invalid(np, b.Name, "ClusterTrustBundle without signer name must not have \":\" in its name"))
				}
			} else {
				prefix := strings.ReplaceAll(b.Spec.SignerName, "/", ":") + ":"
				if !strings.HasPrefix(b.Name, prefix) {
					errs = append(errs, field.Invalid(np, b.Name, fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", b.Spec.SignerName, prefix)))
				}
				errs = append(errs, validateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
			}
			if err := checkTrustBundle(b.Spec.TrustBundle); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("spec", "trustBundle"), "<value omitted>", err.Error()))
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if s, prev := o.(*certificatesv1.ClusterTrustBundle).Spec.SignerName, old.(*certificatesv1.ClusterTrustBundle).Spec.SignerName; s != prev {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "signerName"), s, validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{registry.Column("SignerName", "string", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"])},
		Cells: func(o runtime.Object) []any {
			signer := o.(*certificatesv1.ClusterTrustBundle).Spec.SignerName
			if signer == "" {
				signer = "<none>"
			}
			return []any{signer}
		},
	}
}

// checkTrustBundle requires one or more PEM CERTIFICATE blocks of CA certificates, without
// headers or duplicates.
func checkTrustBundle(in string) error {
	rest := []byte(in)
	seen := map[string]bool{}
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("entry %d has bad block type: %s", n, block.Type)
		}
		if len(block.Headers) != 0 {
			return fmt.Errorf("entry %d has PEM block headers", n)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("entry %d does not parse as X.509", n)
		}
		if !cert.IsCA {
			return fmt.Errorf("entry %d does not have the CA bit set", n)
		}
		if seen[string(block.Bytes)] {
			return fmt.Errorf("duplicate trust anchor (indices %d)", n)
		}
		seen[string(block.Bytes)] = true
		n++
	}
	if n == 0 {
		return errors.New("at least one trust anchor must be provided")
	}
	return nil
}

// podCertificateRequests are certificates.k8s.io/v1 PodCertificateRequests (written by kubelets).
func podCertificateRequests() *registry.Resource {
	return &registry.Resource{GroupVersion: certificatesv1.SchemeGroupVersion, Name: "podcertificaterequests", SingularName: "podcertificaterequest",
		Kind: "PodCertificateRequest", Namespaced: true, Subresources: []string{"status"}, HasSpec: true, NoAgeColumn: true,
		ResetStatusMeta: metav1.ResetObjectMetaForStatus,
		New:             registry.Of[certificatesv1.PodCertificateRequest](), NewList: registry.Of[certificatesv1.PodCertificateRequestList](),
		Convert: registry.StoredInVersion(certificatesv1beta1.SchemeGroupVersion, registry.Of[certificatesv1beta1.PodCertificateRequest](),
			registry.Of[certificatesv1.PodCertificateRequest]()), // kube 1.37 stores v1beta1
		// kube's conversion takes no metadata.namespace for this namespaced kind.
		FieldLabels: func(o runtime.Object) fields.Set {
			s := o.(*certificatesv1.PodCertificateRequest).Spec
			return fields.Set{"spec.signerName": s.SignerName, "spec.podName": s.PodName, "spec.nodeName": string(s.NodeName)}
		},
		FieldLabelConversion: registry.SupportedFieldLabels("metadata.name", "spec.signerName", "spec.podName", "spec.nodeName"),
		Validate: func(o runtime.Object) field.ErrorList {
			s := o.(*certificatesv1.PodCertificateRequest).Spec
			p := field.NewPath("spec")
			errs := validateSignerName(p.Child("signerName"), s.SignerName)
			for _, f := range []struct{ name, v string }{{"podName", s.PodName}, {"podUID", string(s.PodUID)},
				{"serviceAccountName", s.ServiceAccountName}, {"serviceAccountUID", string(s.ServiceAccountUID)},
				{"nodeName", string(s.NodeName)}, {"nodeUID", string(s.NodeUID)}} {
				if f.v == "" {
					errs = append(errs, field.Required(p.Child(f.name), ""))
				}
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(o.(*certificatesv1.PodCertificateRequest).Spec, old.(*certificatesv1.PodCertificateRequest).Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), o.(*certificatesv1.PodCertificateRequest).Spec, validate.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			registry.Column("PodName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["podName"]),
			registry.Column("ServiceAccountName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["serviceAccountName"]),
			registry.Column("NodeName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["nodeName"]),
			registry.Column("SignerName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["signerName"]),
			registry.Column("State", "string", "Is the request Pending, Issued, Denied, or Failed?"),
			registry.Wide(registry.Column("UnverifiedUserAnnotations", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["unverifiedUserAnnotations"])),
		},
		Cells: func(o runtime.Object) []any {
			r := o.(*certificatesv1.PodCertificateRequest)
			state := "Pending"
			for _, c := range r.Status.Conditions {
				switch c.Type {
				case "Issued", "Denied", "Failed":
					state = c.Type
				}
			}
			return []any{r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
				labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
		},
	}
}
