package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
)

// TestUploadProgressWhileReading: with server-sent progress the answer
// begins while the body is still arriving; the server must still read every
// byte of it. net/http's HTTP/1.1 server stops a request body once the
// answer has begun unless the handler asks for full duplex, which cut the
// explorer's uploads short in the middle of a string.
func TestUploadProgressWhileReading(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["alice"]))
		if err != nil {
			t.Fatal(err)
		}
		var big strings.Builder
		pad := strings.Repeat("x", 200)
		const n = 20000
		for i := range n {
			fmt.Fprintf(&big, "[{\"role\": \"user\", \"content\": \"big %d %s\"}]\n", i, pad)
		}
		ds := f.createDataset("alice", "sse-big", false)
		events := 0
		res, err := c.Upload(context.Background(), ds, "big.jsonl", strings.NewReader(big.String()),
			client.UploadOptions{Progress: func(client.UploadProgress) { events++ }})
		if err != nil {
			t.Fatalf("a %d-byte upload with progress: %v", big.Len(), err)
		}
		if res.Stored != n || events < 2 {
			t.Fatalf("stored %d of %d with %d progress events", res.Stored, n, events)
		}
		var last struct{ Messages []map[string]any }
		f.must(200, "GET", "/api/v1/traces/"+res.IDs[n-1]+"?format=invariant", "alice", "").json(t, &last)
		if len(last.Messages) != 1 || last.Messages[0]["content"] != fmt.Sprintf("big %d %s", n-1, pad) {
			t.Fatalf("last trace %+v", last)
		}
	})
}
