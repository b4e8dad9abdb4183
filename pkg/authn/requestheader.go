package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/user"
	"github.com/spf13/pflag"
)

// RequestHeaderOptions are kube's --requestheader-* flags: which front proxy may say who a
// request's user is, and in which headers. They configure the gateway's own front-proxy
// authentication and are published for aggregated API servers in
// kube-system/extension-apiserver-authentication.
type RequestHeaderOptions struct {
	ClientCAFile        string
	AllowedNames        []string
	UsernameHeaders     []string
	UIDHeaders          []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

// AddFlags registers the flags with kube's names and words.
func (o *RequestHeaderOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.UsernameHeaders, "requestheader-username-headers", o.UsernameHeaders, "List of request headers to inspect for usernames. X-Remote-User is common.")
	fs.StringSliceVar(&o.UIDHeaders, "requestheader-uid-headers", o.UIDHeaders, "List of request headers to inspect for UIDs. X-Remote-Uid is suggested.")
	fs.StringSliceVar(&o.GroupHeaders, "requestheader-group-headers", o.GroupHeaders, "List of request headers to inspect for groups. X-Remote-Group is suggested.")
	fs.StringSliceVar(&o.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", o.ExtraHeaderPrefixes, "List of request header prefixes to inspect. X-Remote-Extra- is suggested.")
	fs.StringVar(&o.ClientCAFile, "requestheader-client-ca-file", o.ClientCAFile, "Root certificate bundle to use to verify client certificates on incoming requests before trusting usernames in headers specified by --requestheader-username-headers. WARNING: generally do not depend on authorization being already done for incoming requests. (default: the front-proxy CA generated in --data-dir, with kubeadm's headers and allowed name)")
	fs.StringSliceVar(&o.AllowedNames, "requestheader-allowed-names", o.AllowedNames, "List of client certificate common names to allow to provide usernames in headers specified by --requestheader-username-headers. If empty, any client certificate validated by the authorities in --requestheader-client-ca-file is allowed.")
}

// Complete fills in the generated front-proxy CA when no CA is given, with the headers and
// the allowed name kubeadm configures (the aggregator's generated client certificate's).
func (o *RequestHeaderOptions) Complete(pki *certs.PKI) {
	if o.ClientCAFile != "" || pki == nil {
		return
	}
	o.ClientCAFile = pki.FrontProxyCAFile
	if len(o.AllowedNames) == 0 {
		o.AllowedNames = []string{certs.FrontProxyClientName}
	}
	if len(o.UsernameHeaders) == 0 {
		o.UsernameHeaders = []string{"X-Remote-User"}
	}
	if len(o.GroupHeaders) == 0 {
		o.GroupHeaders = []string{"X-Remote-Group"}
	}
	if len(o.ExtraHeaderPrefixes) == 0 {
		o.ExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	}
}

// Validate is kube's: the CA goes with at least one username header.
func (o *RequestHeaderOptions) Validate() error {
	if o.ClientCAFile != "" && len(o.UsernameHeaders) == 0 {
		return fmt.Errorf("--requestheader-username-headers must be specified with --requestheader-client-ca-file")
	}
	return nil
}

// RequestHeaderAuthenticator is kube's front-proxy authentication: a client certificate that
// verifies against the requestheader CA, with an allowed common name, may say the user in
// headers; the headers are then removed. A request without the username header is left to
// the next authenticator.
func RequestHeaderAuthenticator(o *RequestHeaderOptions, roots *x509.CertPool) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*user.User, bool, error) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return nil, false, nil
		}
		name := firstHeader(r.Header, o.UsernameHeaders)
		if name == "" {
			return nil, false, nil
		}
		leaf := r.TLS.PeerCertificates[0]
		if _, err := verifiedClientCert(r.TLS, roots); err != nil {
			return nil, false, nil // not the front proxy's certificate: another authenticator may know it
		}
		if len(o.AllowedNames) > 0 && !slices.Contains(o.AllowedNames, leaf.Subject.CommonName) {
			return nil, false, fmt.Errorf("requestheader authenticator: client certificate CN %q is not allowed", leaf.Subject.CommonName)
		}
		u := &user.User{Name: name, UID: firstHeader(r.Header, o.UIDHeaders)}
		for _, h := range o.GroupHeaders {
			u.Groups = append(u.Groups, r.Header.Values(h)...)
		}
		for hname, values := range r.Header {
			for _, prefix := range o.ExtraHeaderPrefixes {
				if !strings.HasPrefix(strings.ToLower(hname), strings.ToLower(prefix)) {
					continue
				}
				key, err := url.PathUnescape(strings.ToLower(hname[len(prefix):]))
				if err != nil {
					key = strings.ToLower(hname[len(prefix):])
				}
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				u.Extra[key] = append(u.Extra[key], values...)
			}
		}
		clearHeaders(r.Header, o)
		return u, true, nil
	})
}

func firstHeader(h http.Header, names []string) string {
	for _, n := range names {
		if v := strings.TrimSpace(h.Get(n)); v != "" {
			return v
		}
	}
	return ""
}

// clearHeaders removes what the front proxy said, so it reaches no backend.
func clearHeaders(h http.Header, o *RequestHeaderOptions) {
	for _, n := range slices.Concat(o.UsernameHeaders, o.UIDHeaders, o.GroupHeaders) {
		h.Del(n)
	}
	for name := range h {
		for _, prefix := range o.ExtraHeaderPrefixes {
			if strings.HasPrefix(strings.ToLower(name), strings.ToLower(prefix)) {
				h.Del(name)
			}
		}
	}
}
