package serviceaccount

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeCore answers live gets from a map; lists are empty and watches never send, so every
// lookup is a live one.
type fakeCore struct {
	mu      sync.Mutex
	objects map[string]any // resource/namespace/name
}

func (f *fakeCore) put(resource, ns, name string, obj any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if obj == nil {
		delete(f.objects, resource+"/"+ns+"/"+name)
		return
	}
	f.objects[resource+"/"+ns+"/"+name] = obj
}

func (f *fakeCore) Get(_ context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := req.GetRef()
	obj, ok := f.objects[r.GetResource()+"/"+r.GetNamespace()+"/"+r.GetName()]
	if !ok {
		return nil, rpcstatus.FromKube(rpcstatus.NewStatus(404, metav1.StatusReasonNotFound, r.GetResource()+` "`+r.GetName()+`" not found`))
	}
	data, _ := json.Marshal(obj)
	return &resourcev1.GetResponse{Body: &resourcev1.Body{ContentType: "application/json", Data: data}}, nil
}

func (f *fakeCore) List(_ context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	items := []any{}
	for k, obj := range f.objects {
		if strings.HasPrefix(k, req.GetRef().GetResource()+"/") {
			items = append(items, obj)
		}
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]string{"resourceVersion": "1"}, "items": items})
	return &resourcev1.ListResponse{Body: &resourcev1.Body{Data: data}}, nil
}

func (f *fakeCore) Changed() <-chan struct{} { return nil }

func (f *fakeCore) Watch(context.Context, *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
	return nil, io.EOF
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func writeKey(t testing.TB, dir, name string, key any) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return path
}

func newTokens(t testing.TB, opts Options) (*Tokens, *fakeCore) {
	core := &fakeCore{objects: map[string]any{}}
	if opts.SigningKeyFile == "" {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		opts.SigningKeyFile = writeKey(t, t.TempDir(), "sa.key", key)
	}
	if len(opts.Issuers) == 0 {
		opts.Issuers = []string{DefaultIssuer}
	}
	if len(opts.APIAudiences) == 0 {
		opts.APIAudiences = opts.Issuers
	}
	tokens, err := New(opts, NewObjects(core, discard), discard)
	require.NoError(t, err)
	core.put("serviceaccounts", "team", "robot", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "sa-1"}})
	return tokens, core
}

// request runs a TokenRequest through the handler as the gateway would.
func request(t testing.TB, tokens *Tokens, name string, body string) (*httptest.ResponseRecorder, *authenticationv1.TokenRequest) {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/team/serviceaccounts/"+name+"/token", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	info := &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "serviceaccounts",
		Subresource: "token", Namespace: "team", Name: name}
	r = r.WithContext(requestinfo.WithRequestInfo(r.Context(), info))
	w := httptest.NewRecorder()
	require.True(t, IsTokenRequest(info))
	tokens.ServeTokenRequest(w, r)
	out := &authenticationv1.TokenRequest{}
	if w.Code == http.StatusCreated {
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), out))
	}
	return w, out
}

func TestTokenRequestAndAuthentication(t *testing.T) {
	tokens, core := newTokens(t, Options{})
	w, tr := request(t, tokens, "robot", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
	require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
	assert.Equal(t, "TokenRequest", tr.Kind)
	assert.Equal(t, []string{DefaultIssuer}, tr.Spec.Audiences, "audiences default to the API's")
	assert.Equal(t, int64(3600), *tr.Spec.ExpirationSeconds)
	assert.Equal(t, types.UID("sa-1"), tr.UID)
	assert.WithinDuration(t, time.Now().Add(time.Hour), tr.Status.ExpirationTimestamp.Time, 5*time.Second)

	resp, ok, err := tokens.AuthenticateToken(context.Background(), tr.Status.Token)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "system:serviceaccount:team:robot", resp.User.Name)
	assert.Equal(t, "sa-1", resp.User.UID)
	assert.Equal(t, []string{"system:serviceaccounts", "system:serviceaccounts:team"}, resp.User.Groups)
	assert.Equal(t, []string{DefaultIssuer}, resp.Audiences)
	require.Len(t, resp.User.Extra[authn.CredentialIDKey], 1)
	assert.True(t, strings.HasPrefix(resp.User.Extra[authn.CredentialIDKey][0], "JTI="))

	// The header kube sends: the algorithm and the key's ID.
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	assert.JSONEq(t, `{"alg":"ES256","kid":"`+tokens.keys.signing.KeyID+`"}`, string(header))

	// Recreated with another UID, then deleted: the token stops working.
	core.put("serviceaccounts", "team", "robot", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "sa-2"}})
	_, ok, err = tokens.AuthenticateToken(context.Background(), tr.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, "service account UID (sa-2) does not match claim (sa-1)")
	core.put("serviceaccounts", "team", "robot", nil)
	_, ok, err = tokens.AuthenticateToken(context.Background(), tr.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, `serviceaccounts "robot" not found`)
}

func TestTokenAudiencesAndExpiry(t *testing.T) {
	tokens, _ := newTokens(t, Options{})
	_, tr := request(t, tokens, "robot", `{"spec":{"audiences":["vault"],"expirationSeconds":600}}`)
	require.NotEmpty(t, tr.Status.Token)

	// Not for this API...
	_, ok, err := tokens.AuthenticateToken(context.Background(), tr.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, `token audiences ["vault"] is invalid for the target audiences ["`+DefaultIssuer+`"]`)
	// ...but for a TokenReview that asks for vault.
	resp, ok, err := tokens.AuthenticateToken(authn.WithAudiences(context.Background(), []string{"x", "vault"}), tr.Status.Token)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []string{"vault"}, resp.Audiences)

	// Eleven minutes later (one past the leeway) it has expired.
	tokens.now = func() time.Time { return time.Now().Add(11*time.Minute + time.Second) }
	_, ok, err = tokens.AuthenticateToken(authn.WithAudiences(context.Background(), []string{"vault"}), tr.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, "service account token has expired")
}

func TestTokenRequestRefusals(t *testing.T) {
	tokens, core := newTokens(t, Options{MaxExpiration: time.Hour})
	core.put("pods", "team", "web", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "pod-1"},
		Spec: corev1.PodSpec{ServiceAccountName: "other"}})
	core.put("secrets", "team", "s", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team", UID: "sec-1"}})
	cases := []struct {
		name, sa, body string
		code           int
		msg            string
	}{
		{"no such service account", "nobody", `{}`, 404, `serviceaccounts "nobody" not found`},
		{"too short", "robot", `{"spec":{"expirationSeconds":599}}`, 422,
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"too long", "robot", `{"spec":{"expirationSeconds":4294967297}}`, 422, "may not specify a duration larger than 2^32 seconds"},
		{"name mismatch", "robot", `{"metadata":{"name":"x"}}`, 422, "must match the service account name if specified"},
		{"uid mismatch", "robot", `{"metadata":{"uid":"nope"}}`, 409, "the UID in the token request (nope) does not match the UID of the service account (sa-1)"},
		{"pod of another service account", "robot", `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web"}}}`, 400,
			`cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`},
		{"missing pod", "robot", `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"gone"}}}`, 404, `pods "gone" not found`},
		{"bound uid mismatch", "robot", `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s","uid":"old"}}}`, 409,
			"the UID in the bound object reference (old) does not match the UID in record"},
		{"unbindable kind", "robot", `{"spec":{"boundObjectRef":{"kind":"ConfigMap","apiVersion":"v1","name":"c"}}}`, 400,
			"cannot bind token to object of type /v1, Kind=ConfigMap"},
		{"not JSON", "robot", `{`, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := request(t, tokens, tc.sa, tc.body)
			assert.Equal(t, tc.code, w.Code, w.Body.String())
			var st metav1.Status
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
			assert.Equal(t, "Status", st.Kind)
			assert.Contains(t, st.Message, tc.msg)
		})
	}

	// Longer than the maximum is shortened, with kube's warning.
	w, tr := request(t, tokens, "robot", `{"spec":{"expirationSeconds":7200}}`)
	require.Equal(t, http.StatusCreated, w.Code)
	assert.Equal(t, int64(3600), *tr.Spec.ExpirationSeconds)
	assert.Equal(t, `299 - "requested expiration of 7200 seconds shortened to 3600 seconds"`, w.Header().Get("Warning"))
}

func TestBoundTokensDieWithTheirObject(t *testing.T) {
	tokens, core := newTokens(t, Options{ExtendExpiration: true})
	core.put("pods", "team", "web", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "pod-1"},
		Spec: corev1.PodSpec{ServiceAccountName: "robot"}})
	core.put("secrets", "team", "s", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team", UID: "sec-1"}})

	_, podTR := request(t, tokens, "robot", `{"spec":{"expirationSeconds":3607,"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"pod-1"}}}`)
	_, secTR := request(t, tokens, "robot", `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}}}`)
	resp, ok, err := tokens.AuthenticateToken(context.Background(), podTR.Status.Token)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []string{"web"}, resp.User.Extra[extraPodName])
	assert.Equal(t, []string{"pod-1"}, resp.User.Extra[extraPodUID])
	// The kubelet's 3607 s is extended to a year, flagged stale after the hour.
	var claims struct {
		Exp, Iat int64
		K8s      kubeClaims `json:"kubernetes.io"`
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(podTR.Status.Token, ".")[1])
	require.NoError(t, json.Unmarshal(payload, &claims))
	assert.Equal(t, int64(extendedLifetime), claims.Exp-claims.Iat)
	require.NotNil(t, claims.K8s.WarnAfter)
	assert.Equal(t, claims.Iat+warnOnlySeconds, int64(*claims.K8s.WarnAfter))
	assert.Equal(t, int64(3607), *podTR.Spec.ExpirationSeconds, "the response keeps the asked lifetime")

	core.put("pods", "team", "web", nil)
	_, ok, err = tokens.AuthenticateToken(context.Background(), podTR.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, "service account token has been invalidated")

	_, ok, _ = tokens.AuthenticateToken(context.Background(), secTR.Status.Token)
	require.True(t, ok)
	core.put("secrets", "team", "s", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team", UID: "sec-2"}})
	_, ok, err = tokens.AuthenticateToken(context.Background(), secTR.Status.Token)
	assert.False(t, ok)
	assert.EqualError(t, err, "secret UID (sec-2) does not match service account secret ref claim (sec-1)")
}

func TestKeysIssuersAndForgeries(t *testing.T) {
	dir := t.TempDir()
	oldKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	oldFile := writeKey(t, dir, "old.key", oldKey)
	old, _ := newTokens(t, Options{SigningKeyFile: oldFile, Issuers: []string{"https://old.example"}})
	_, oldTR := request(t, old, "robot", `{}`)
	assert.Equal(t, "RS256", string(old.keys.alg))

	// The new server signs with a new key and issuer, and still accepts the old ones.
	opts := Options{Issuers: []string{DefaultIssuer, "https://old.example"}, KeyFiles: []string{oldFile}}
	cur, _ := newTokens(t, opts)
	cur.objects = old.objects
	resp, ok, err := cur.AuthenticateToken(authn.WithAudiences(context.Background(), []string{"https://old.example"}), oldTR.Status.Token)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "system:serviceaccount:team:robot", resp.User.Name)

	// Another issuer's token is not this authenticator's at all; a forged signature is an error.
	other, _ := newTokens(t, Options{Issuers: []string{"https://elsewhere"}})
	_, otherTR := request(t, other, "robot", `{}`)
	_, ok, err = cur.AuthenticateToken(context.Background(), otherTR.Status.Token)
	assert.False(t, ok)
	assert.NoError(t, err)
	forger, _ := newTokens(t, Options{})
	_, forged := request(t, forger, "robot", `{}`)
	_, ok, err = cur.AuthenticateToken(context.Background(), forged.Status.Token)
	assert.False(t, ok)
	assert.Error(t, err)
	parts := strings.Split(forged.Status.Token, ".")
	_, ok, err = cur.AuthenticateToken(context.Background(), parts[0]+"."+parts[1]+"."+strings.Split(oldTR.Status.Token, ".")[2])
	assert.False(t, ok)
	assert.Error(t, err)

	// The JWKS lists both keys; the discovery document names the first issuer.
	config, jwks, ok := cur.Discovery("https://api.example:6443")
	require.True(t, ok)
	w := httptest.NewRecorder()
	config(w, httptest.NewRequest("GET", "/.well-known/openid-configuration", nil))
	assert.JSONEq(t, `{"issuer":"`+DefaultIssuer+`","jwks_uri":"https://api.example:6443/openid/v1/jwks",
		"response_types_supported":["id_token"],"subject_types_supported":["public"],
		"id_token_signing_alg_values_supported":["ES256","RS256"]}`, w.Body.String())
	w = httptest.NewRecorder()
	jwks(w, httptest.NewRequest("GET", "/openid/v1/jwks", nil))
	assert.Equal(t, "application/jwk-set+json", w.Header().Get("Content-Type"))
	var set struct{ Keys []map[string]any }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &set))
	require.Len(t, set.Keys, 2)
	assert.Equal(t, map[string]any{"use": "sig", "kty": "EC", "kid": cur.keys.signing.KeyID, "crv": "P-256", "alg": "ES256",
		"x": set.Keys[0]["x"], "y": set.Keys[0]["y"]}, set.Keys[0])
	assert.Equal(t, "RS256", set.Keys[1]["alg"])
	assert.NotContains(t, w.Body.String(), `"d"`, "no private part")
}

// FuzzAuthenticateToken: whatever a client sends as a bearer token, the authenticator
// answers without panicking, and accepts only a token that names a service account it
// issued for.
func FuzzAuthenticateToken(f *testing.F) {
	tokens, _ := newTokens(f, Options{})
	_, tr := request(f, tokens, "robot", `{}`)
	valid := tr.Status.Token
	f.Add(valid)
	f.Add("")
	f.Add("a.b.c")
	f.Add(strings.Replace(valid, ".", "..", 1))
	parts := strings.Split(valid, ".")
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+DefaultIssuer+`"}`)) + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"x"}`)) + "." + parts[1] + "." + parts[2])
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := tokens.AuthenticateToken(context.Background(), token)
		if !ok {
			return
		}
		if err != nil || resp == nil || resp.User.Name != "system:serviceaccount:team:robot" || resp.User.UID != "sa-1" {
			t.Fatalf("accepted %q as %+v (err %v)", token, resp, err)
		}
		if !bytes.Equal([]byte(strings.Split(token, ".")[1]), []byte(parts[1])) {
			t.Fatalf("accepted claims other than those issued: %q", token)
		}
	})
}

// BenchmarkAuthenticateToken is the cost a service-account token adds to a request: the
// signature (ES256), the claims, and the service account looked up in the informer's copy.
func BenchmarkAuthenticateToken(b *testing.B) {
	tokens, _ := newTokens(b, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go tokens.objects.Run(ctx)
	<-tokens.objects.informers[kindServiceAccount].Synced()
	_, tr := request(b, tokens, "robot", `{}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := tokens.AuthenticateToken(ctx, tr.Status.Token); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
