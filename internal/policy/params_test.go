package policy_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
)

func TestParseParams(t *testing.T) {
	got, err := policy.ParseParams([]string{"user=alice", "n=3", "ok=true", `tags=["a","b"]`, "empty=", `q="x y"`, "expr=a=b"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"user": "alice", "n": json.RawMessage("3"), "ok": json.RawMessage("true"),
		"tags": json.RawMessage(`["a","b"]`), "empty": "", "q": json.RawMessage(`"x y"`), "expr": "a=b",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, bad := range [][]string{{"novalue"}, {"=x"}, {"9a=1"}, {"a-b=1"}, {"a=1", "a=2"}} {
		if _, err := policy.ParseParams(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// The values reach the policy as input.<name>, numbers as numbers.
	p := mustParse(t, "raise \"hit\" if:\n    (m: Message)\n    input.user in m.content and input.n > 2 and \"b\" in input.tags\n")
	res, err := p.Analyze(events(t, `[{"role":"user","content":"alice here"}]`), got)
	if err != nil || len(res.Violations) != 1 {
		t.Fatalf("analyze: %v, %v", res, err)
	}
}
