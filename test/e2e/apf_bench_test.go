package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// BenchmarkOverload floods the all-in-one (default limits) from one user whose FlowSchema
// sends it to a small priority level (one nominal share, no borrowing, Reject) with 64
// goroutines of GETs, and measures GETs by system:masters and by a second user (another
// flow, global-default) meanwhile, against the same GETs with no flood. Any failed GET of
// theirs fails the benchmark; the flooder's share of 429s is reported. Run:
// go test -run '^$' -bench Overload -benchtime 2000x ./test/e2e
func BenchmarkOverload(b *testing.B) {
	tokens := filepath.Join(b.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("flooder-token,flooder,2001\ncalm-token,calm,2002\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	c, _ := startAllInOne(b, "--token-auth-file", tokens)
	ctx := context.Background()
	clientset := func(cfg *rest.Config) *kubernetes.Clientset {
		cfg.QPS, cfg.Burst = -1, 0
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	admin := clientset(rest.CopyConfig(c.config))
	calm := clientset(&rest.Config{Host: c.base, BearerToken: "calm-token", TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
	must := func(_ any, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "apf-bench"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "flooder"}, {Kind: "User", APIGroup: rbacv1.GroupName, Name: "calm"}}}, metav1.CreateOptions{}))
	must(admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}, metav1.CreateOptions{}))
	fs, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "flooder"},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 500, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "tiny"},
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "flooder"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}}}}}}, metav1.CreateOptions{})
	must(fs, err)
	must(admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}))

	flooder := &http.Client{Transport: tokenHTTP(b, c, "flooder-token").Transport}
	url := c.base + "/api/v1/namespaces/default/configmaps/target"
	flood := func() (int, error) {
		resp, err := flooder.Get(url)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	require.Eventually(b, func() bool {
		resp, err := flooder.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == string(fs.UID)
	}, 10*time.Second, 20*time.Millisecond, "the flooder's requests never reached its FlowSchema")

	get := func(cs *kubernetes.Clientset) func() error {
		return func() error {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "target", metav1.GetOptions{})
			return err
		}
	}
	for _, who := range []struct {
		name string
		cs   *kubernetes.Clientset
	}{{"masters", admin}, {"second-user", calm}} {
		b.Run(who.name+"/idle", func(b *testing.B) { benchConcurrent(b, 4, get(who.cs)) })
		b.Run(who.name+"/flooded", func(b *testing.B) {
			stop := make(chan struct{})
			var served, rejected, failed atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						switch code, err := flood(); {
						case err != nil:
							failed.Add(1)
						case code == http.StatusTooManyRequests:
							rejected.Add(1)
						default:
							served.Add(1)
						}
					}
				})
			}
			benchConcurrent(b, 4, get(who.cs))
			close(stop)
			wg.Wait()
			total := served.Load() + rejected.Load() + failed.Load()
			if rejected.Load() == 0 {
				b.Fatalf("the flood got no 429 in %d requests", total)
			}
			b.ReportMetric(100*float64(rejected.Load())/float64(total), "%flood-429")
			b.ReportMetric(float64(served.Load()), "flood-served")
		})
	}
}
