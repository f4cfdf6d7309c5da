package policy

import (
	"sync"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Monitor checks a growing trace step by step and reports each violation
// once: a step returns only violations whose key (rule and assignment, see
// Violation.Key) no earlier step of the same monitor returned. This is
// Invariant's Monitor.
type Monitor struct {
	p      *Policy
	params map[string]any
	mu     sync.Mutex
	seen   map[string]bool
}

// NewMonitor returns a monitor for p with the given policy parameters.
func NewMonitor(p *Policy, params map[string]any) *Monitor {
	return &Monitor{p: p, params: params, seen: map[string]bool{}}
}

// Analyze checks the whole trace and returns the new violations.
func (m *Monitor) Analyze(events []trace.Event) (*Result, error) {
	r, err := m.p.Analyze(events, m.params)
	return m.filter(r, err)
}

// AnalyzePending checks past+pending and returns the new violations that
// involve a pending event.
func (m *Monitor) AnalyzePending(past, pending []trace.Event) (*Result, error) {
	r, err := m.p.AnalyzePending(past, pending, m.params)
	return m.filter(r, err)
}

// Check is AnalyzePending (Invariant's Monitor.check).
func (m *Monitor) Check(past, pending []trace.Event) (*Result, error) {
	return m.AnalyzePending(past, pending)
}

// Reset forgets the violations reported so far.
func (m *Monitor) Reset() {
	m.mu.Lock()
	m.seen = map[string]bool{}
	m.mu.Unlock()
}

func (m *Monitor) filter(r *Result, err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &Result{Truncated: r.Truncated, Steps: r.Steps}
	for _, v := range r.Violations {
		if m.seen[v.Key] {
			continue
		}
		m.seen[v.Key] = true
		out.Violations = append(out.Violations, v)
	}
	return out, nil
}
