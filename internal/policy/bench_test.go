package policy_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Benchmarks time Analyze alone, on traces decoded beforehand, and report
// traces per second. Goals (issue 4, one core): one-variable tool-name rule
// >= 37,000 traces/s, output->call flow rule >= 11,000, regex over assistant
// messages >= 24,000 on tau-bench airline (200 traces); near-linear growth of
// the flow rule with trace length.

const tauBench = "../../../shared/corpus/openai/tau-bench/gpt-4o-airline.json"

// loadTauBench reads the file: a JSON array of {task_id, reward, info, traj,
// trial} with the events under traj.
func loadTauBench(tb testing.TB) [][]trace.Event {
	data, err := os.ReadFile(tauBench)
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

var benchRules = map[string]string{
	"tool-name": `
raise "reservation cancelled" if:
    (call: ToolCall)
    call is tool:cancel_reservation
`,
	"flow": `
raise PolicyViolation("cancelled after looking up a reservation", out, call) if:
    (out: ToolOutput) -> (call: ToolCall)
    out is tool:get_reservation_details
    call is tool:cancel_reservation
`,
	"regex": `
raise "assistant message reveals a payment method id" if:
    (msg: Message)
    msg.role == "assistant"
    any(find(r"(credit_card|gift_card|certificate)_\d+", msg.content))
`,
}

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
