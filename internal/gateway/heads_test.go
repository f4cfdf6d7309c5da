package gateway

import (
	"encoding/json"
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

func decodeEvents(t *testing.T, s string) []trace.Event {
	t.Helper()
	var tr trace.Trace
	if err := json.Unmarshal([]byte(`{"events":`+s+`}`), &tr); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return tr.Events
}

func TestHeads(t *testing.T) {
	base := decodeEvents(t, `[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"}]`)
	h := Heads(base)
	if len(h) != 4 {
		t.Fatalf("%d heads", len(h))
	}
	seen := map[string]bool{}
	for _, x := range h {
		if seen[x] || len(x) != 32 {
			t.Fatalf("heads %v: repeated or malformed", h)
		}
		seen[x] = true
	}
	// What SDKs change on the way back does not change the head.
	same := decodeEvents(t, `[{"role":"system","content":[{"type":"text","text":"be brief"}]},{"role":"user","content":"weather in Paris?"},
		{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"}]`)
	if got := Heads(same); got[3] != h[3] {
		t.Errorf("a re-sent conversation hashes differently: %v vs %v", got, h)
	}
	// What a conversation says does change it, at the event that differs.
	for name, other := range map[string]string{
		"content":   `[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Rome?"}]`,
		"role":      `[{"role":"system","content":"be brief"},{"role":"assistant","content":"weather in Paris?"}]`,
		"arguments": `[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}]`,
		"call id":   `[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}]`,
		"image":     `[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"weather in Paris?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`,
	} {
		got := Heads(decodeEvents(t, other))
		if got[0] != h[0] {
			t.Errorf("%s: the first head changed", name)
		}
		if got[len(got)-1] == h[len(got)-1] {
			t.Errorf("%s: a different event hashes the same", name)
		}
	}
	if ext := ExtendHeads(h[1], base[2:]); len(ext) != 2 || ext[0] != h[2] || ext[1] != h[3] {
		t.Errorf("ExtendHeads from the second head: %v, want %v", ext, h[2:])
	}
	// Field boundaries count: "ab"+"" is not "a"+"b".
	a := []trace.Event{{Role: "ab", Content: trace.TextContent("")}}
	b := []trace.Event{{Role: "a", Content: trace.TextContent("b")}}
	if Heads(a)[0] == Heads(b)[0] {
		t.Error("field boundaries are not part of the hash")
	}
}
