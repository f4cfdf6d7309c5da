package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/gateway/upstreamtest"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestGatewayRemembersDatasets: the gateway remembers a call's dataset for
// a moment, and forgets it when the dataset is deleted through the server,
// so the next call creates the dataset again and is recorded there.
func TestGatewayRemembersDatasets(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fake := upstreamtest.New(t, upstreamtest.OpenAI, upstreamtest.Script{{Text: "hi"}, {Text: "hi again"}, {Text: "and again"}}, upstreamtest.Options{Key: "sk-p"})
	f := newFixture(t, st, Config{Gateway: GatewayConfig{OpenAIURL: fake.URL()}})
	f.addUser("alice")
	call := func(text string) {
		t.Helper()
		body := `{"model":"m","messages":[{"role":"user","content":"` + text + `"}]}`
		r := f.do("POST", "/api/v1/gateway/live/openai/chat/completions", "", strings.NewReader(body),
			"Authorization", "Bearer sk-p", "Invariant-Authorization", "Bearer "+f.keys["alice"], "Content-Type", "application/json")
		if r.status != 200 {
			t.Fatalf("call: %d %s", r.status, r.body)
		}
	}
	datasetID := func() string {
		t.Helper()
		var out struct {
			Datasets []struct{ ID, Name string } `json:"datasets"`
		}
		if err := json.Unmarshal(f.must(200, "GET", "/api/v1/datasets", "alice", "").body, &out); err != nil {
			t.Fatal(err)
		}
		for _, d := range out.Datasets {
			if d.Name == "live" {
				return d.ID
			}
		}
		return ""
	}
	call("one")
	first := datasetID()
	call("two")
	if id := datasetID(); id != first || first == "" {
		t.Fatalf("the second call's dataset is %q, the first's %q", id, first)
	}
	f.must(204, "DELETE", "/api/v1/datasets/"+first, "alice", "")
	call("three")
	second := datasetID()
	if second == "" || second == first {
		t.Fatalf("after the deletion the call went to dataset %q (deleted: %q)", second, first)
	}
	f.srv.gw.proxy.Recorder.Close(context.Background())
	traces, _, err := st.ListTraces(context.Background(), second, store.Page{Limit: 10})
	if err != nil || len(traces) != 1 {
		t.Fatalf("the new dataset has %d traces (%v), want the third call's", len(traces), err)
	}
}
