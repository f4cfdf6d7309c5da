package otlp

import "testing"

// TestValParserShared: documents parsed one after another by one parser
// (as a trace's nodes share one) keep their own trees: what a later parse,
// or a failed one, takes from the slabs and stacks is never what an
// earlier tree holds.
func TestValParserShared(t *testing.T) {
	docs := []string{
		`{"a":[1,{"b":"c"},[2,3]],"d":{"e":{"f":"g"}},"h":"i"}`,
		`[{"role":"user","parts":[{"type":"text","content":"hi"}]},{"role":"assistant"}]`,
		`{"a":[1,2,{"b":`, // fails half way, its members left on the stacks
		`"just a string"`,
		`{"messages":"[{\"role\":\"user\",\"content\":\"x\"}]"}`,
	}
	p := newValParser()
	var kept []*val
	for _, d := range docs {
		kept = append(kept, p.parse([]byte(d)))
		// A string's JSON is parsed by the same parser.
		if v := kept[len(kept)-1]; v != nil && v.get("messages") != nil {
			_ = v.get("messages").decoded()
		}
	}
	for i, d := range docs {
		fresh := parseVal([]byte(d))
		if (fresh == nil) != (kept[i] == nil) {
			t.Fatalf("doc %d: shared parse nil %v, fresh nil %v", i, kept[i] == nil, fresh == nil)
		}
		if fresh != nil && !sameVal(kept[i], fresh) {
			t.Errorf("doc %d %s: the tree changed after later parses", i, d)
		}
	}
}

func sameVal(a, b *val) bool {
	if a.kind != b.kind || string(a.raw) != string(b.raw) || a.str != b.str || len(a.obj) != len(b.obj) || len(a.arr) != len(b.arr) {
		return false
	}
	for i := range a.obj {
		if a.obj[i].key != b.obj[i].key || !sameVal(a.obj[i].v, b.obj[i].v) {
			return false
		}
	}
	for i := range a.arr {
		if !sameVal(a.arr[i], b.arr[i]) {
			return false
		}
	}
	return true
}
