package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// BenchmarkGatewayCall is one OpenAI call through the gateway into a
// dataset with bench/gateway's policy in block mode, recorded into SQLite:
// the server's handler called directly (no client connection), the
// provider a canned answer on loopback that reads the request and does not
// parse it, so ns/op is Lookout's own. Conversations are bench/gateway's
// agent runs of 10 or 500 events, each call adding the answer and the
// user's next message, a new conversation every 50 calls. The recorder
// writes after the answer, and the search indexer after that: their work
// is in the profile, not in ns/op.
func BenchmarkGatewayCall(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"It is 18 °C and cloudy in Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":12,"total_tokens":1212}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer up.Close()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "lookout.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv := server.New(server.Config{Store: st, Gateway: server.GatewayConfig{OpenAIURL: up.URL}})
	defer srv.Close()
	u, err := st.CreateUser(ctx, "bench", "x")
	if err != nil {
		b.Fatal(err)
	}
	key, h, last4 := server.NewAPIKey()
	if _, err := st.CreateAPIKey(ctx, u.ID, "bench", h, last4); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"one-rule", "ten-rules"} {
		src, err := os.ReadFile("../../bench/gateway/" + name + ".iv")
		if err != nil {
			b.Fatal(err)
		}
		d, err := st.CreateDataset(ctx, store.Dataset{Name: name, OwnerID: u.ID})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: name, Source: string(src), Mode: store.PolicyBlock}); err != nil {
			b.Fatal(err)
		}
		for _, events := range []int{10, 500} {
			b.Run(fmt.Sprintf("%s/%d", name, events), func(b *testing.B) {
				var c *benchConv
				convs := 0
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					if c == nil || c.calls == 50 {
						convs++
						c = newBenchConv(fmt.Sprintf("%s-%d-%d", name, events, convs), events)
					}
					req := httptest.NewRequest("POST", "/api/v1/gateway/"+name+"/openai/chat/completions", bytes.NewReader(c.body()))
					req.Header.Set("Authorization", "Bearer sk-provider")
					req.Header.Set("Invariant-Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					srv.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
					c.extend()
				}
				// The process's CPU, the recorder's and the indexer's work
				// in the background included: what a call costs the
				// machine, whatever else runs on it.
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// benchConv is bench/gateway's agent run, as the messages of its next call.
type benchConv struct {
	msgs  []string
	calls int
}

func newBenchConv(id string, events int) *benchConv {
	c := &benchConv{msgs: []string{
		`{"role":"system","content":"You are a travel assistant. Use the tools to look up weather and flights; answer briefly."}`,
		`{"role":"user","content":"Plan my week (` + id + `): the weather first, then flights between the cities."}`,
	}}
	for i := 0; len(c.msgs)+4 <= events; i++ {
		call := fmt.Sprintf("call_%d_%s", i, id)
		out := `{\"city\":\"Paris\",\"temperature_c\":18,\"conditions\":\"cloudy\",\"wind_kmh\":12,\"humidity\":0.71}`
		c.msgs = append(c.msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+call+`","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+call+`","content":"`+out+`"}`,
			`{"role":"assistant","content":"Here is what I found for Paris: cloudy, 18 degrees. Shall I go on?"}`,
			`{"role":"user","content":"Yes, go on with Lisbon."}`)
	}
	for len(c.msgs) < events {
		c.msgs = append(c.msgs, `{"role":"user","content":"And keep it short, please."}`)
	}
	return c
}

func (c *benchConv) extend() {
	c.calls++
	c.msgs = append(c.msgs, `{"role":"assistant","content":"It is 18 °C and cloudy in Paris."}`,
		fmt.Sprintf(`{"role":"user","content":"Thanks. And on day %d?"}`, c.calls))
}

func (c *benchConv) body() []byte {
	b := []byte(`{"model":"gpt-4o-mini","messages":[`)
	for i, m := range c.msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, "]}"...)
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
