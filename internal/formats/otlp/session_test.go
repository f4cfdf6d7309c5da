package otlp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// TestSessionMetadata checks that the spans' session and user attributes
// become the trace's session_id and user_id, by precedence, in tree order,
// and the same when the trace is assembled from spans mapped one by one.
func TestSessionMetadata(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1700000000+int64(s), 0) }
	a := func(kv ...string) []Attr {
		var out []Attr
		for i := 0; i < len(kv); i += 2 {
			out = append(out, Attr{Key: kv[i], Value: json.RawMessage(kv[i+1])})
		}
		return out
	}
	for _, c := range []struct {
		name          string
		spans         []Span
		session, user string
	}{
		{"none", []Span{{SpanID: "r", Start: at(0), Attributes: a("x", `"y"`)}}, "", ""},
		{"root's own", []Span{
			{SpanID: "c", ParentID: "r", Start: at(1), Attributes: a("session.id", `"child"`, "user.id", `"u-child"`)},
			{SpanID: "r", Start: at(0), Attributes: a("session.id", `"root"`)},
		}, "root", "u-child"},
		{"session.id before a conversation", []Span{
			{SpanID: "r", Start: at(0), Attributes: a("gen_ai.conversation.id", `"conv"`)},
			{SpanID: "c", ParentID: "r", Start: at(1), Attributes: a("session.id", `"sess"`)},
		}, "sess", ""},
		{"a conversation, a resource's user, numbers", []Span{
			{SpanID: "r", Start: at(0), Attributes: a("gen_ai.conversation.id", `7`), Resource: a("user.id", `"res-user"`)},
		}, "7", "res-user"},
		{"blank gives way", []Span{
			{SpanID: "r", Start: at(0), Attributes: a("session.id", `""`, "langfuse.session.id", `"lf"`, "langfuse.user.id", `"lfu"`)},
		}, "lf", "lfu"},
	} {
		for i := range c.spans {
			c.spans[i].TraceID = "0123456789abcdef0123456789abcdef"
			c.spans[i].End = c.spans[i].Start.Add(time.Second)
		}
		got, err := MapTrace(c.spans)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s, u := trace.SessionAndUser(got.Metadata)
		if s != c.session || u != c.user {
			t.Errorf("%s: session %q user %q (metadata %s); want %q, %q", c.name, s, u, got.Metadata, c.session, c.user)
		}
		if c.session == "" && c.user == "" && got.Metadata != nil {
			t.Errorf("%s: metadata %s; want none", c.name, got.Metadata)
		}
		ms, err := MapSpans(c.spans)
		if err != nil {
			t.Fatal(err)
		}
		// Through the binary form, as a receiver keeps them.
		for i, m := range ms {
			if ms[i], err = DecodeMapped(m.AppendBinary(nil)); err != nil {
				t.Fatal(err)
			}
		}
		asm, err := AssembleTrace(ms)
		if err != nil {
			t.Fatal(err)
		}
		if string(asm.Metadata) != string(got.Metadata) {
			t.Errorf("%s: assembled metadata %s; mapped %s", c.name, asm.Metadata, got.Metadata)
		}
	}
}

// TestSessionMetadataKept checks that a Langfuse export's own sessionId
// wins over the spans' attributes, which fill in what it lacks.
func TestSessionMetadataKept(t *testing.T) {
	t.Parallel()
	export := `{"trace":{"id":"0123456789abcdef0123456789abcdef","name":"n","sessionId":SESSION,"userId":null},
	"observations":[{"id":"0123456789abcdef","traceId":"0123456789abcdef0123456789abcdef","type":"SPAN","name":"root",
	"startTime":"2025-01-01T00:00:00.000Z","endTime":"2025-01-01T00:00:01.000Z",
	"metadata":"{\"attributes\":{\"session.id\":\"from-span\",\"user.id\":\"span-user\"}}"}]}`
	for _, c := range []struct{ session, want string }{{`"own"`, "own"}, {`null`, "from-span"}} {
		dec := NewDecoder(strings.NewReader(strings.Replace(export, "SESSION", c.session, 1)), "x.json")
		tr, err := dec.Next()
		if err != nil {
			t.Fatal(err)
		}
		s, u := trace.SessionAndUser(tr.Metadata)
		if s != c.want || u != "span-user" {
			t.Errorf("sessionId %s: session %q user %q (metadata %s); want %q, span-user", c.session, s, u, tr.Metadata, c.want)
		}
	}
}

// keysNamed finds a key only as a whole quoted key, and every key it is
// given ends in ".id", which its one pass looks for.
func TestKeysNamed(t *testing.T) {
	keys := append(append([]string(nil), sessionAttrs...), userAttrs...)
	for _, k := range keys {
		if !strings.HasSuffix(k, ".id") {
			t.Fatalf("key %q does not end in .id: keysNamed would not find it", k)
		}
	}
	for _, c := range []struct {
		obj  string
		want uint64
	}{
		{`{}`, 0},
		{`{"session.id":"s1"}`, 1},
		{`{"gen_ai.response.id":"r","user.id":"u"}`, 1 << 3},
		{`{"langfuse.session.id":"s","x":"session.id"}`, 1<<2 | 1},
		{`{"my.session.id":"s","xuser.id":"u"}`, 0},
		{`{"gen_ai.conversation.id":"c","langfuse.user.id":"u"}`, 1<<1 | 1<<4},
		{`.id"`, 0},
	} {
		if got := keysNamed([]byte(c.obj), keys); got != c.want {
			t.Errorf("keysNamed(%s) = %b, want %b", c.obj, got, c.want)
		}
	}
}
