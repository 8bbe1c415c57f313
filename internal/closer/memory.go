package closer

import (
	"context"
	"sync"

	"github.com/hourglass/hourglass/internal/outcome"
)

// Order states in a Memory store.
const (
	StateUnpaid = "UNPAID"
	StatePaid   = "PAID"
	StateClosed = "CLOSED"
)

// Memory is an in-process order store and its closer, for the demo and tests:
// Close moves an UNPAID order to CLOSED, reports AlreadyClosed for a CLOSED
// one, Skipped (detail PAID) for a paid one and NotFound for an unknown one,
// unless CloseUnknown is set. It is safe for concurrent use; the zero value
// is an empty store.
type Memory struct {
	// CloseUnknown makes Close record unknown orders as closed instead of
	// reporting NotFound (so hand-scheduled orders close in the demo).
	CloseUnknown bool

	mu     sync.Mutex
	orders map[string]string
	closes map[string]int
}

// Put sets the state of an order.
func (m *Memory) Put(id, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.orders == nil {
		m.orders = make(map[string]string)
	}
	m.orders[id] = state
}

// Pay marks an UNPAID order PAID and reports whether it did; an order
// already closed cannot be paid (the close won).
func (m *Memory) Pay(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.orders[id] != StateUnpaid {
		return false
	}
	m.orders[id] = StatePaid
	return true
}

// State returns the state of an order and whether it exists.
func (m *Memory) State(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.orders[id]
	return s, ok
}

// Closes returns how many times an order changed to CLOSED (at most 1 for an
// idempotent store; tests assert it).
func (m *Memory) Closes(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closes[id]
}

// Close applies the conditional close UNPAID -> CLOSED.
func (m *Memory) Close(_ context.Context, t Task) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.orders == nil {
		m.orders = make(map[string]string)
	}
	if m.closes == nil {
		m.closes = make(map[string]int)
	}
	state, ok := m.orders[t.ID]
	switch {
	case !ok && !m.CloseUnknown:
		return Result{Outcome: outcome.NotFound}, nil
	case !ok, state == StateUnpaid:
		m.orders[t.ID] = StateClosed
		m.closes[t.ID]++
		return Result{Outcome: outcome.Closed}, nil
	case state == StateClosed:
		return Result{Outcome: outcome.AlreadyClosed}, nil
	default:
		return Result{Outcome: outcome.Skipped, Detail: state}, nil
	}
}
