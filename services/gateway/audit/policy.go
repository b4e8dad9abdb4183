// Package audit records kube's audit events (audit.k8s.io/v1 Event) for the requests the
// gateway serves, REST and gRPC alike: which policy level applies (kube's own policy
// evaluator, from k8s.io/apiserver), the event of each request as it passes the stages, and
// the backends the events go to (a rotated JSON-lines file, a NATS JetStream subject).
package audit

import (
	_ "embed"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	kaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	kubeuser "k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// DefaultPolicyYAML is the policy used when --audit-policy-file is not given: probes are not
// audited, credentials (secrets, config maps, tokens) only at Metadata, reads at Metadata,
// and changes with their request and response.
//
//go:embed default-policy.yaml
var DefaultPolicyYAML []byte

// Policy decides the level and stages each request is audited at, with kube's evaluator.
type Policy struct {
	eval kaudit.PolicyRuleEvaluator
}

// LoadPolicy reads an audit.k8s.io/v1 Policy file, or the default policy when path is "".
func LoadPolicy(path string) (*Policy, error) {
	var p *auditinternal.Policy
	var err error
	if path == "" {
		p, err = policy.LoadPolicyFromBytes(DefaultPolicyYAML)
	} else {
		p, err = policy.LoadPolicyFromFile(path)
	}
	if err != nil {
		return nil, err
	}
	return &Policy{eval: policy.NewPolicyRuleEvaluator(p)}, nil
}

// Evaluate returns the level and stages to omit for a request by u (nil when authentication
// failed) described by info.
func (p *Policy) Evaluate(u *user.User, info *requestinfo.RequestInfo) kaudit.RequestAuditConfig {
	return p.eval.EvaluatePolicyRule(attributes(u, info))
}

func attributes(u *user.User, info *requestinfo.RequestInfo) authorizer.Attributes {
	a := authorizer.AttributesRecord{}
	if u != nil {
		a.User = &kubeuser.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	if info != nil {
		a.Verb, a.Path, a.ResourceRequest = info.Verb, info.Path, info.IsResourceRequest
		a.Namespace, a.APIGroup, a.APIVersion = info.Namespace, info.APIGroup, info.APIVersion
		a.Resource, a.Subresource, a.Name = info.Resource, info.Subresource, info.Name
	}
	return a
}
