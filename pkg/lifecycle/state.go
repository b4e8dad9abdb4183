// Package lifecycle publishes each instance's lifecycle state over NATS (JetStream KV, with a
// heartbeat so dead instances expire) and gathers every instance's state for the gateway,
// falling back to asking instances over gRPC when NATS is unreachable.
package lifecycle

import (
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/server"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Instance describes what a process serves besides its generic server state.
type Instance struct {
	Service    string
	InstanceID string
	Address    string
	Served     []string
	// Proxied are the served group/versions forwarded to aggregated API servers.
	Proxied []string
	// FailingWebhooks are the admission webhooks whose calls from this instance keep failing.
	FailingWebhooks []*lifecyclev1.FailingWebhook
}

// Snapshot captures srv's current state as the published message.
func Snapshot(srv *server.Server, inst Instance) *lifecyclev1.InstanceState {
	st := &lifecyclev1.InstanceState{
		Service:         inst.Service,
		InstanceId:      inst.InstanceID,
		Address:         inst.Address,
		StartedAt:       timestamppb.New(srv.StartedAt()),
		UpdatedAt:       timestamppb.Now(),
		Served:          inst.Served,
		Proxied:         inst.Proxied,
		FailingWebhooks: inst.FailingWebhooks,
	}
	sig := srv.Signals()
	for _, s := range sig.All() {
		if at := s.At(); !at.IsZero() {
			st.Signals = append(st.Signals, &lifecyclev1.Signal{Name: s.Name(), At: timestamppb.New(at)})
		}
	}
	for _, h := range srv.Hooks() {
		hs := &lifecyclev1.Hook{Name: h.Name, StartedAt: ts(h.StartedAt), FinishedAt: ts(h.FinishedAt)}
		if h.Err != nil {
			hs.Error = h.Err.Error()
		}
		st.Hooks = append(st.Hooks, hs)
	}
	// The last readiness answer: publishing never runs the checks itself.
	ready, results := srv.Readiness()
	for _, c := range results {
		cs := &lifecyclev1.Check{Name: c.CheckName, Ok: c.Err == nil, Note: c.NoteText}
		if c.Err != nil {
			cs.Error = c.Err.Error()
		}
		st.Checks = append(st.Checks, cs)
	}
	st.Ready = ready
	st.State = lifecyclev1.State(srv.State())
	for _, t := range srv.Transitions() {
		st.Transitions = append(st.Transitions, &lifecyclev1.StateTransition{State: lifecyclev1.State(t.State), At: timestamppb.New(t.At)})
	}
	return st
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// Key is the KV key of an instance.
func Key(service, instanceID string) string { return service + "." + instanceID }
