package server

import (
	"sync"
	"time"
)

// Signal is a named one-shot event: once signaled it stays signaled. Signal is safe to call
// many times from many goroutines, which makes shutdown steps easy to order and to test.
type Signal struct {
	name     string
	once     sync.Once
	ch       chan struct{}
	mu       sync.Mutex
	at       time.Time
	onSignal func(name string, at time.Time)
}

func newSignal(name string, onSignal func(string, time.Time)) *Signal {
	return &Signal{name: name, ch: make(chan struct{}), onSignal: onSignal}
}

// Name is the signal's name, as kube's lifecycle_signals.go spells it.
func (s *Signal) Name() string { return s.name }

// Signal fires the signal; later calls do nothing.
func (s *Signal) Signal() {
	s.once.Do(func() {
		now := time.Now()
		s.mu.Lock()
		s.at = now
		s.mu.Unlock()
		close(s.ch)
		if s.onSignal != nil {
			s.onSignal(s.name, now)
		}
	})
}

// Signaled is closed once the signal fired.
func (s *Signal) Signaled() <-chan struct{} { return s.ch }

// At is when the signal fired, zero before.
func (s *Signal) At() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

// IsSignaled reports whether the signal fired.
func (s *Signal) IsSignaled() bool {
	select {
	case <-s.ch:
		return true
	default:
		return false
	}
}

// LifecycleSignals are the eight events of a server's life, in the order they usually fire.
type LifecycleSignals struct {
	// HasBeenReady fires the first time every readyz check passes.
	HasBeenReady *Signal
	// MuxAndDiscoveryComplete fires once every route and discovery document is installed.
	MuxAndDiscoveryComplete *Signal
	// ShutdownInitiated fires when shutdown starts; readyz fails from then on.
	ShutdownInitiated *Signal
	// AfterShutdownDelayDuration fires --shutdown-delay-duration after ShutdownInitiated.
	AfterShutdownDelayDuration *Signal
	// PreShutdownHooksStopped fires when every pre-shutdown hook returned.
	PreShutdownHooksStopped *Signal
	// NotAcceptingNewRequest fires when new requests start being rejected.
	NotAcceptingNewRequest *Signal
	// InFlightRequestsDrained fires when every in-flight non-long-running request completed.
	InFlightRequestsDrained *Signal
	// HTTPServerStoppedListening fires when the listener is closed.
	HTTPServerStoppedListening *Signal
}

func newLifecycleSignals(onSignal func(string, time.Time)) LifecycleSignals {
	return LifecycleSignals{
		HasBeenReady:               newSignal("HasBeenReady", onSignal),
		MuxAndDiscoveryComplete:    newSignal("MuxAndDiscoveryComplete", onSignal),
		ShutdownInitiated:          newSignal("ShutdownInitiated", onSignal),
		AfterShutdownDelayDuration: newSignal("AfterShutdownDelayDuration", onSignal),
		PreShutdownHooksStopped:    newSignal("PreShutdownHooksStopped", onSignal),
		NotAcceptingNewRequest:     newSignal("NotAcceptingNewRequest", onSignal),
		InFlightRequestsDrained:    newSignal("InFlightRequestsDrained", onSignal),
		HTTPServerStoppedListening: newSignal("HTTPServerStoppedListening", onSignal),
	}
}

// All lists the signals in declaration order.
func (l *LifecycleSignals) All() []*Signal {
	return []*Signal{l.HasBeenReady, l.MuxAndDiscoveryComplete, l.ShutdownInitiated,
		l.AfterShutdownDelayDuration, l.PreShutdownHooksStopped, l.NotAcceptingNewRequest,
		l.InFlightRequestsDrained, l.HTTPServerStoppedListening}
}
