package server

import (
	"sync"
	"time"
)

// State is where a server (or a process module) is in its life, as dskit's service states:
// New → Starting → Running → Stopping → Terminated, or Failed from anywhere.
type State int32

// The states, numbered as apichain.lifecycle.v1.State.
const (
	StateNew        State = 1
	StateStarting   State = 2
	StateRunning    State = 3
	StateStopping   State = 4
	StateTerminated State = 5
	StateFailed     State = 6
)

var stateNames = map[State]string{StateNew: "New", StateStarting: "Starting", StateRunning: "Running",
	StateStopping: "Stopping", StateTerminated: "Terminated", StateFailed: "Failed"}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return "Unknown"
}

// Transition is a state entered and when.
type Transition struct {
	State State
	At    time.Time
}

// stateMachine records a life's transitions. It only moves forward: a late Running (a
// readiness check that passed while shutdown started) cannot undo Stopping.
type stateMachine struct {
	mu          sync.Mutex
	transitions []Transition
	onEnter     func(State)
}

func newStateMachine(start time.Time, onEnter func(State)) *stateMachine {
	return &stateMachine{transitions: []Transition{{State: StateNew, At: start}}, onEnter: onEnter}
}

// enter moves to s if s comes later than the current state; it reports whether it moved.
func (m *stateMachine) enter(s State) bool {
	m.mu.Lock()
	cur := m.transitions[len(m.transitions)-1].State
	if s <= cur || cur == StateFailed || cur == StateTerminated {
		m.mu.Unlock()
		return false
	}
	m.transitions = append(m.transitions, Transition{State: s, At: time.Now()})
	m.mu.Unlock()
	if m.onEnter != nil {
		m.onEnter(s)
	}
	return true
}

func (m *stateMachine) current() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.transitions[len(m.transitions)-1].State
}

func (m *stateMachine) history() []Transition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Transition(nil), m.transitions...)
}
