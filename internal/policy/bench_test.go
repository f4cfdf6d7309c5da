package policy_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Benchmarks time Analyze alone, on traces decoded beforehand, and report
// traces per second (go test ./internal/policy -run '^$' -bench . -cpu 1). Goals (one core; bench/README.md): one-variable tool-name rule
// >= 37,000 traces/s, output->call flow rule >= 11,000, regex over assistant
// messages >= 24,000 on tau-bench airline (200 traces); near-linear growth of
// the flow rule with trace length.

// loadTauBench reads the file: a JSON array of {task_id, reward, info, traj,
// trial} with the events under traj.
func loadTauBench(tb testing.TB) [][]trace.Event {
	data, err := os.ReadFile(testcorpus.File(tb, "openai/tau-bench/gpt-4o-airline.json"))
	if err != nil {
		tb.Fatalf("tau-bench corpus: %v", err)
	}
	s := jsonscan.New(data)
	var traces [][]trace.Event
	err = s.Array(func(int) error {
		return s.Object(func(key string) error {
			if key != "traj" {
				return s.Skip()
			}
			evs, err := trace.DecodeEvents(s, "traj")
			traces = append(traces, evs)
			return err
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return traces
}

// benchRules are the rules of bench/guardrails (tool-name.iv, flow.iv,
// regex.iv), which bench/guardrails/run.sh also times as whole lookout check
// processes.
var benchRules = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"tool-name", "flow", "regex"} {
		b, err := os.ReadFile("../../bench/guardrails/" + name + ".iv")
		if err != nil {
			panic(err)
		}
		m[name] = string(b)
	}
	return m
}()

func mustParse(tb testing.TB, src string) *policy.Policy {
	p, err := policy.Parse(src)
	if err != nil {
		if le, ok := err.(*policy.LoadError); ok {
			tb.Fatal(le.Report())
		}
		tb.Fatal(err)
	}
	return p
}

func BenchmarkTauBench(b *testing.B) {
	traces := loadTauBench(b)
	for _, name := range []string{"tool-name", "flow", "regex"} {
		p := mustParse(b, benchRules[name])
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			violations := 0
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				violations = 0
				for _, tr := range traces {
					r, err := p.Analyze(tr, nil)
					if err != nil {
						b.Fatal(err)
					}
					violations += len(r.Violations)
				}
			}
			b.ReportMetric(float64(b.N*len(traces))/b.Elapsed().Seconds(), "traces/s")
			b.ReportMetric(float64(b.N*len(traces))/(cpuTime()-cpu0).Seconds(), "traces/cpu-s")
			b.ReportMetric(float64(violations), "violations")
		})
	}
}

// syntheticTrace builds an agent trace of n events: user turns, assistant
// tool calls and their outputs, with a reservation lookup every tenth call
// and three cancellations near the end, so the satisfying pairs of the flow
// rule grow linearly with n.
func syntheticTrace(n int) []trace.Event {
	tools := []string{"search_direct_flight", "get_user_details", "calculate", "think", "list_all_airports"}
	evs := make([]trace.Event, 0, n)
	call := 0
	cancels := 0
	for len(evs) < n {
		i := len(evs)
		switch {
		case i%7 == 0:
			evs = append(evs, trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprintf("request %d: please help with my booking", i))})
		default:
			name := tools[call%len(tools)]
			if call%10 == 3 {
				name = "get_reservation_details"
			}
			if i > n-40 && cancels < 3 {
				name = "cancel_reservation"
				cancels++
			}
			id := fmt.Sprintf("call_%d", call)
			call++
			evs = append(evs, trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull},
				ToolCalls: []trace.ToolCall{{ID: id, Type: "function", Function: trace.Function{Name: name,
					Arguments: []byte(fmt.Sprintf(`{"reservation_id":"R%05d"}`, call))}}}})
			if len(evs) < n {
				evs = append(evs, trace.Event{Role: "tool", ToolCallID: id, Content: trace.TextContent(fmt.Sprintf(`{"status":"ok","n":%d}`, call))})
			}
		}
	}
	return evs
}

func BenchmarkFlowScaling(b *testing.B) {
	p := mustParse(b, benchRules["flow"])
	for _, n := range []int{500, 1000, 2000, 4000} {
		tr := syntheticTrace(n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var violations int
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				r, err := p.Analyze(tr, nil)
				if err != nil {
					b.Fatal(err)
				}
				violations = len(r.Violations)
			}
			b.ReportMetric(float64(violations), "violations")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/event")
		})
	}
}

// cpuTime is the CPU time used by the process so far. The benchmarks report
// throughput per CPU second next to wall-clock throughput, because the
// machines they run on are often shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFlowScalesLinearly: the flow rule's work grows linearly with the
// trace (the steps of Result.Steps count every evaluation), not with the
// number of (output, call) pairs, which grows quadratically.
func TestFlowScalesLinearly(t *testing.T) {
	p := mustParse(t, benchRules["flow"])
	var perEvent []float64
	for _, n := range []int{500, 1000, 2000, 4000} {
		tr := syntheticTrace(n)
		outs, calls := 0, 0
		for _, e := range tr {
			if e.Role == "tool" {
				outs++
			}
			calls += len(e.ToolCalls)
		}
		r, err := p.Analyze(tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) < n/10 {
			t.Fatalf("n=%d: %d violations; the trace should have about n/8", n, len(r.Violations))
		}
		pairs := outs * calls / 2
		if r.Steps*20 > int64(pairs) && n >= 2000 {
			t.Errorf("n=%d: %d steps for %d (output, call) pairs: not far from enumerating pairs", n, r.Steps, pairs)
		}
		perEvent = append(perEvent, float64(r.Steps)/float64(n))
	}
	for i, pe := range perEvent {
		if pe > perEvent[0]*1.1 {
			t.Errorf("steps per event grow with the trace: %v (size %d)", perEvent, 500<<i)
		}
	}
}

// BenchmarkParseAttributeChain loads a rule whose condition is one chain of
// n attributes (m.content.a.a...): loading must take time linear in n
// (it was quadratic: 3.8 s for 20,000, 22.6 s for 40,000). cpu-ns/op is
// the process's CPU time per load, steadier than ns/op on a shared machine;
// ns/attr is cpu-ns/op per attribute, flat when loading is linear.
func BenchmarkParseAttributeChain(b *testing.B) {
	for _, n := range []int{10_000, 20_000, 40_000} {
		src := "raise \"x\" if:\n    (m: Message)\n    m.content" + strings.Repeat(".a", n) + " == 1\n"
		b.Run(fmt.Sprintf("attrs=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := policy.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
			per := float64(cpuTime()-cpu) / float64(b.N)
			b.ReportMetric(per, "cpu-ns/op")
			b.ReportMetric(per/float64(n), "cpu-ns/attr")
		})
	}
}
