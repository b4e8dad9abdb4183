package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// kubectl create token issues a token that works as a bearer token, is authorized by RBAC
// like any user, and stops working once its ServiceAccount is deleted; kube's refusals and
// the OIDC discovery documents are as on kube.
func TestServiceAccountTokensWithKubectl(t *testing.T) {
	c, _ := startAllInOne(t)
	admin := kc{t: t, kubeconfig: filepath.Join(c.data, "admin.kubeconfig")}
	admin.run("create", "namespace", "team")
	admin.run("create", "serviceaccount", "robot", "-n", "team")
	token := strings.TrimSpace(admin.run("create", "token", "robot", "-n", "team"))
	robot := kc{t: t, kubeconfig: tokenKubeconfig(t, c, token)}

	out := robot.run("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	assert.Equal(t, `system:serviceaccount:team:robot ["system:serviceaccounts","system:serviceaccounts:team","system:authenticated"]`, out)
	denied := `pods is forbidden: User "system:serviceaccount:team:robot" cannot list resource "pods" in API group "" in the namespace "team"`
	assert.Contains(t, robot.fails("get", "pods", "-n", "team"), denied)
	admin.run("create", "rolebinding", "robot-views", "-n", "team", "--clusterrole=view", "--serviceaccount=team:robot")
	require.Eventually(t, func() bool {
		_, err := kubectl(t, robot.kubeconfig, "get", "pods", "-n", "team")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the binding to the service account applies")

	// kube's refusals, as kubectl prints them.
	assert.Contains(t, admin.fails("create", "token", "robot", "-n", "team", "--duration=1m"),
		`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`)
	assert.Contains(t, admin.fails("create", "token", "nobody", "-n", "team"), `serviceaccounts "nobody" not found`)
	assert.Contains(t, admin.fails("create", "token", "robot", "-n", "team", "--bound-object-kind=Pod", "--bound-object-name=nope"),
		`pods "nope" not found`)
	// Creating tokens is an RBAC verb like any other: view does not grant it.
	assert.Contains(t, robot.fails("create", "token", "robot", "-n", "team"),
		`User "system:serviceaccount:team:robot" cannot create resource "serviceaccounts/token" in API group "" in the namespace "team"`)

	// OIDC discovery: service accounts may read it (system:service-account-issuer-discovery),
	// anonymous may not; the token's key is in the JWKS.
	out = robot.run("get", "--raw", "/.well-known/openid-configuration")
	var config struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
		Algs    []string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &config))
	assert.Equal(t, "https://kubernetes.default.svc.cluster.local", config.Issuer)
	assert.Equal(t, c.base+"/openid/v1/jwks", config.JWKSURI)
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	require.NoError(t, err)
	var hdr struct{ Alg, Kid string }
	require.NoError(t, json.Unmarshal(header, &hdr))
	out = robot.run("get", "--raw", "/openid/v1/jwks")
	assert.Contains(t, out, `"kid":"`+hdr.Kid+`"`)
	assert.Contains(t, out, `"alg":"`+hdr.Alg+`"`)
	code, _, _ := doGet(t, c.anonymous(), c.base+"/.well-known/openid-configuration")
	assert.Equal(t, http.StatusForbidden, code)

	admin.run("delete", "serviceaccount", "robot", "-n", "team")
	require.Eventually(t, func() bool {
		out, err := kubectl(t, robot.kubeconfig, "get", "pods", "-n", "team")
		return err != nil && strings.Contains(out, "Unauthorized")
	}, 5*time.Second, 10*time.Millisecond, "the token dies with its service account")
	// Recreated under the same name, the account has a new UID: the old token stays dead.
	admin.run("create", "serviceaccount", "robot", "-n", "team")
	out = robot.fails("get", "pods", "-n", "team")
	assert.Contains(t, out, "Unauthorized")
}

// client-go's TokenRequest and TokenReview: audiences, expiry, and tokens bound to a pod.
func TestServiceAccountTokensWithClientGo(t *testing.T) {
	c, _ := startAllInOne(t)
	cs := clientset(t, c)
	ctx := context.Background()
	createNamespace(t, cs, "bound")
	_, err := cs.CoreV1().ServiceAccounts("bound").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod, err := cs.CoreV1().Pods("bound").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("bound").CreateToken(ctx, "app", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"https://kubernetes.default.svc.cluster.local"}, tr.Spec.Audiences)
	assert.WithinDuration(t, time.Now().Add(time.Hour), tr.Status.ExpirationTimestamp.Time, time.Minute)

	review := func(token string, auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status
	}
	st := review(tr.Status.Token)
	require.True(t, st.Authenticated, st.Error)
	assert.Equal(t, "system:serviceaccount:bound:app", st.User.Username)
	assert.Equal(t, authenticationv1.ExtraValue{"web"}, st.User.Extra["authentication.kubernetes.io/pod-name"])
	assert.Equal(t, authenticationv1.ExtraValue{string(pod.UID)}, st.User.Extra["authentication.kubernetes.io/pod-uid"])
	st = review(tr.Status.Token, "vault")
	assert.False(t, st.Authenticated)
	assert.Equal(t, `[invalid bearer token, token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["vault"]]`, st.Error)
	assert.Equal(t, "invalid bearer token", review("garbage").Error)

	// A token for another audience is good for that audience's TokenReview, not for this API.
	vault, err := cs.CoreV1().ServiceAccounts("bound").CreateToken(ctx, "app", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, review(vault.Status.Token, "vault").Authenticated)
	asVault := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData},
		BearerToken: vault.Status.Token})
	_, err = asVault.CoreV1().Pods("bound").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "got %v", err)

	// Deleting the pod kills the tokens bound to it, not the others.
	require.NoError(t, cs.CoreV1().Pods("bound").Delete(ctx, "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return !review(tr.Status.Token).Authenticated }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "[invalid bearer token, service account token has been invalidated]", review(tr.Status.Token).Error)
	assert.True(t, review(vault.Status.Token, "vault").Authenticated)

	// Only pods and secrets take bound tokens here.
	_, err = cs.CoreV1().ServiceAccounts("bound").CreateToken(ctx, "app", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ServiceAccount", APIVersion: "v1", Name: "app"}}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
}
