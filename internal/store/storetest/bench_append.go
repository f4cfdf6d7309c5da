package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// BenchAppendConversation measures a gateway call's write: a conversation
// of about 500 events (an agent run like bench/gateway's) grows by two
// events and a span per operation, as RecordConversation appends them.
// Each op starts a new conversation of 500 events every 50 appends, so the
// traces stay the size the gateway bench's long rows write.
func BenchAppendConversation(b *testing.B, open func(tb testing.TB) store.Store) {
	st := open(b)
	ctx := context.Background()
	u, d := benchDataset(b, st)
	run := func(n int) []trace.Event {
		events := []trace.Event{userEvent("Plan my week: the weather first, then flights between the cities.")}
		for i := 0; len(events) < n; i++ {
			id := fmt.Sprintf("call_%d", i)
			out := `{"city":"Paris","temperature_c":18,"conditions":"cloudy","wind_kmh":12,"humidity":0.71}`
			events = append(events,
				trace.Event{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: id, Type: "function", Function: trace.Function{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}},
				trace.Event{Role: "tool", ToolCallID: id, Content: trace.TextContent(out)},
				assistantEvent("Here is what I found for Paris: "+out[:40]+"... Shall I go on?"),
				userEvent("Yes, go on with Lisbon."))
		}
		return events[:n]
	}
	var id string
	count, appends := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if id == "" || appends == 50 {
			b.StopTimer()
			t := &trace.Trace{Name: "conversation", Events: run(500)}
			var err error
			id, err = st.RecordConversation(ctx, u.ID, d.ID, store.ConversationStep{Trace: t, Head: fmt.Sprintf("start-%d", count)})
			if err != nil {
				b.Fatal(err)
			}
			count, appends = 500, 0
			b.StartTimer()
		}
		events := []trace.Event{assistantEvent("It is 18 °C and cloudy in Paris."), userEvent(fmt.Sprintf("And on day %d?", appends))}
		if _, err := st.RecordConversation(ctx, u.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: count, Events: events,
			Spans: []trace.Span{llmSpan(fmt.Sprintf("s%d", appends), "openai gpt-4o")}, Head: fmt.Sprintf("h%d-%d", count, appends)}); err != nil {
			b.Fatal(err)
		}
		count += 2
		appends++
	}
}
