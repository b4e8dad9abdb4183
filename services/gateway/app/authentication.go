package app

import (
	"fmt"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/services/gateway/loopback"
	"github.com/apichain/apichain/services/gateway/serviceaccount"
)

// newAuthentication says who sent a request, in kube's order: a front proxy's headers (with
// --requestheader-client-ca-file), a client certificate of clientCAFile, a bearer token (the
// loopback client's, --token-auth-file's, a service account's), else anonymous when allowed.
// The bearer authenticators also answer TokenReviews.
func newAuthentication(opts *Options, clientCAFile string, tokens *serviceaccount.Tokens, loop *loopback.Client) (authn.Authentication, *authn.Bearer, error) {
	clientCAs, err := certs.PoolFromFile(clientCAFile)
	if err != nil {
		return authn.Authentication{}, nil, err
	}
	auds := tokens.APIAudiences()
	bearer := authn.NewBearer(auds)
	bearer.Tokens = []authn.TokenAuthenticator{authn.StaticToken{Token: loop.Token(), User: loop.User()}}
	if opts.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(opts.TokenAuthFile)
		if err != nil {
			return authn.Authentication{}, nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		bearer.Tokens = append(bearer.Tokens, authn.AudienceAgnostic(auds, tf))
	}
	bearer.Tokens = append(bearer.Tokens, tokens)
	a := authn.Authentication{Authenticators: []authn.Authenticator{authn.X509Authenticator(clientCAs), bearer},
		Anonymous: opts.AnonymousAuth}
	if rh := &opts.RequestHeader; rh.ClientCAFile != "" {
		roots, err := certs.PoolFromFile(rh.ClientCAFile)
		if err != nil {
			return authn.Authentication{}, nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		// First, as in kube: a front proxy's certificate also verifies as a client's.
		a.Authenticators = append([]authn.Authenticator{authn.RequestHeaderAuthenticator(rh, roots)}, a.Authenticators...)
	}
	return a, bearer, nil
}
