package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

func TestParseAddress(t *testing.T) {
	box := func(x1, y1, x2, y2 float64) Selector {
		return Selector{Kind: SelectBox, Box: Box{x1, y1, x2, y2}}
	}
	tests := []struct {
		in        string
		canonical string // String()
		relative  string // Relative()
		want      Address
	}{
		// events, dotted, bracket and relative
		{"messages.2", "messages.2", "2", EventAddress(2)},
		{"messages[2]", "messages.2", "2", EventAddress(2)},
		{"2", "messages.2", "2", EventAddress(2)},
		{"messages.0", "messages.0", "0", EventAddress(0)},
		{"messages.02", "messages.2", "2", EventAddress(2)},
		{"messages.2147483647", "messages.2147483647", "2147483647", EventAddress(1<<31 - 1)},
		// fields
		{"messages.3.content", "messages.3.content", "3.content", EventAddress(3, "content")},
		{"messages.2.tool_calls.0.function.arguments.to", "messages.2.tool_calls.0.function.arguments.to",
			"2.tool_calls.0.function.arguments.to", EventAddress(2, "tool_calls", "0", "function", "arguments", "to")},
		{"messages[2].tool_calls[0].function.arguments.to", "messages.2.tool_calls.0.function.arguments.to",
			"2.tool_calls.0.function.arguments.to", EventAddress(2, "tool_calls", "0", "function", "arguments", "to")},
		{`messages.0["content"]`, "messages.0.content", "0.content", EventAddress(0, "content")},
		{`messages.0.tool_calls["0"]`, "messages.0.tool_calls.0", "0.tool_calls.0", EventAddress(0, "tool_calls", "0")},
		{"messages.0.tool_calls[007]", "messages.0.tool_calls.007", "0.tool_calls.007", EventAddress(0, "tool_calls", "007")},
		// keys that need quoting
		{`messages.0.tool_calls.0.function.arguments["a.b"]`, `messages.0.tool_calls.0.function.arguments["a.b"]`,
			`0.tool_calls.0.function.arguments["a.b"]`, EventAddress(0, "tool_calls", "0", "function", "arguments", "a.b")},
		{`messages.0.metadata[""]`, `messages.0.metadata[""]`, `0.metadata[""]`, EventAddress(0, "metadata", "")},
		{"messages.0.tool_calls.0.function.arguments.some key", `messages.0.tool_calls.0.function.arguments["some key"]`,
			`0.tool_calls.0.function.arguments["some key"]`, EventAddress(0, "tool_calls", "0", "function", "arguments", "some key")},
		{`messages.0.x["a\"b\\c\u00e9:[]"]`, `messages.0.x["a\"b\\cé:[]"]`, `0.x["a\"b\\cé:[]"]`, EventAddress(0, "x", "a\"b\\cé:[]")},
		{`messages.0.x["\ud83d\ude00"]`, "messages.0.x.😀", "0.x.😀", EventAddress(0, "x", "😀")},
		{`messages.0.x["tab\there"]`, `messages.0.x["tab\there"]`, `0.x["tab\there"]`, EventAddress(0, "x", "tab\there")},
		{"messages.0.metadata.clé.日本", "messages.0.metadata.clé.日本", "0.metadata.clé.日本", EventAddress(0, "metadata", "clé", "日本")},
		{`messages.0.a\b`, `messages.0.a\b`, `0.a\b`, EventAddress(0, `a\b`)},
		// character ranges
		{"messages.0.content:5-10", "messages.0.content:5-10", "0.content:5-10",
			Address{Event: 0, Path: []string{"content"}, Sel: Selector{Kind: SelectRange, Start: 5, End: 10}}},
		{"0.content:3-3", "messages.0.content:3-3", "0.content:3-3",
			Address{Path: []string{"content"}, Sel: Selector{Kind: SelectRange, Start: 3, End: 3}}},
		{"0.content:007-010", "messages.0.content:7-10", "0.content:7-10",
			Address{Path: []string{"content"}, Sel: Selector{Kind: SelectRange, Start: 7, End: 10}}},
		{"0.tool_calls.0.function.name:0-3", "messages.0.tool_calls.0.function.name:0-3", "0.tool_calls.0.function.name:0-3",
			Address{Path: []string{"tool_calls", "0", "function", "name"}, Sel: Selector{Kind: SelectRange, Start: 0, End: 3}}},
		// lines
		{"messages.2.content:L3", "messages.2.content:L3", "2.content:L3",
			Address{Event: 2, Path: []string{"content"}, Sel: Selector{Kind: SelectLine, Line: 3}}},
		{"messages[2].content:L0", "messages.2.content:L0", "2.content:L0",
			Address{Event: 2, Path: []string{"content"}, Sel: Selector{Kind: SelectLine}}},
		{"messages[1].tool_calls[0].function.arguments.path:L12", "messages.1.tool_calls.0.function.arguments.path:L12",
			"1.tool_calls.0.function.arguments.path:L12",
			Address{Event: 1, Path: []string{"tool_calls", "0", "function", "arguments", "path"}, Sel: Selector{Kind: SelectLine, Line: 12}}},
		// boxes
		{"messages.4.content.1:bbox-10,20,200,80", "messages.4.content.1:bbox-10,20,200,80", "4.content.1:bbox-10,20,200,80",
			Address{Event: 4, Path: []string{"content", "1"}, Sel: box(10, 20, 200, 80)}},
		{"messages[4].content:bbox-0.10, 0.25,\t0.5,0.750", "messages.4.content:bbox-0.1,0.25,0.5,0.75", "4.content:bbox-0.1,0.25,0.5,0.75",
			Address{Event: 4, Path: []string{"content"}, Sel: box(0.1, 0.25, 0.5, 0.75)}},
		{"messages.4.content:bbox-0,0,0,0", "messages.4.content:bbox-0,0,0,0", "4.content:bbox-0,0,0,0",
			Address{Event: 4, Path: []string{"content"}, Sel: box(0, 0, 0, 0)}},
		// spans
		{"spans.abc123", "spans.abc123", "spans.abc123", SpanAddress("abc123")},
		{"spans.abc.attributes.key", "spans.abc.attributes.key", "spans.abc.attributes.key", SpanAddress("abc", "attributes", "key")},
		{`spans["id with . in it"]`, `spans["id with . in it"]`, `spans["id with . in it"]`, SpanAddress("id with . in it")},
		{`spans["plain"].attributes["gen_ai.request.model"]`, `spans.plain.attributes["gen_ai.request.model"]`,
			`spans.plain.attributes["gen_ai.request.model"]`, SpanAddress("plain", "attributes", "gen_ai.request.model")},
		{"spans[3]", "spans.3", "spans.3", SpanAddress("3")},
		{"spans.0af7651916cd43dd8448eb211c80319c.inputs:L2", "spans.0af7651916cd43dd8448eb211c80319c.inputs:L2",
			"spans.0af7651916cd43dd8448eb211c80319c.inputs:L2",
			Address{Root: RootSpans, Span: "0af7651916cd43dd8448eb211c80319c", Path: []string{"inputs"}, Sel: Selector{Kind: SelectLine, Line: 2}}},
		{"spans.s-1_x.value:0-4", "spans.s-1_x.value:0-4", "spans.s-1_x.value:0-4",
			Address{Root: RootSpans, Span: "s-1_x", Path: []string{"value"}, Sel: Selector{Kind: SelectRange, End: 4}}},
	}
	for _, tc := range tests {
		a, err := ParseAddress(tc.in)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.in, err)
			continue
		}
		if !a.Equal(tc.want) {
			t.Errorf("ParseAddress(%q) = %#v, want %#v", tc.in, a, tc.want)
		}
		if got := a.String(); got != tc.canonical {
			t.Errorf("ParseAddress(%q).String() = %q, want %q", tc.in, got, tc.canonical)
		}
		if got := a.Relative(); got != tc.relative {
			t.Errorf("ParseAddress(%q).Relative() = %q, want %q", tc.in, got, tc.relative)
		}
		for _, form := range []string{a.String(), a.Relative()} {
			b, err := ParseAddress(form)
			if err != nil || !b.Equal(a) {
				t.Errorf("ParseAddress(%q) = %#v, %v; want %#v (from %q)", form, b, err, a, tc.in)
			}
		}
	}
}

func TestParseAddressErrors(t *testing.T) {
	tests := []struct{ in, err string }{
		{"", `address "": offset 0: empty address`},
		{"messages.x", `address "messages.x": offset 9: event index must be a number, not "x"`},
		{`messages["2"]`, `address "messages[\"2\"]": offset 9: event index must be a number, not "2"`},
		{"messages", `address "messages": offset 8: expected '.' or '[' after messages`},
		{"messages:0-1", `address "messages:0-1": offset 8: expected '.' or '[' after messages`},
		{"messages.", `address "messages.": offset 9: empty segment`},
		{"messages.2..content", `address "messages.2..content": offset 11: empty segment`},
		{"messages.2.", `address "messages.2.": offset 11: empty segment`},
		{"messages.2.:L0", `address "messages.2.:L0": offset 11: empty segment`},
		{"messages.99999999999999999999", `address "messages.99999999999999999999": offset 9: number 99999999999999999999 is too large`},
		{"messages.2147483648", `address "messages.2147483648": offset 9: number 2147483648 is too large`},
		{"messages[2", `address "messages[2": offset 10: expected ']'`},
		{"messages[2x]", `address "messages[2x]": offset 10: expected ']'`},
		{"messages[-1]", `address "messages[-1]": offset 9: expected a number or a quoted key after '['`},
		{"messages[]", `address "messages[]": offset 9: expected a number or a quoted key after '['`},
		{"messages[2]x", `address "messages[2]x": offset 11: unexpected 'x'; expected '.', '[', ':' or the end`},
		{"messages.2]", `address "messages.2]": offset 10: unexpected ']'; expected '.', '[', ':' or the end`},
		{"messages.0.a]b", `address "messages.0.a]b": offset 12: unexpected ']'; expected '.', '[', ':' or the end`},
		{`messages.0.a"b`, `address "messages.0.a\"b": offset 12: unexpected '"'; expected '.', '[', ':' or the end`},
		{"messages.0.a\nb", `address "messages.0.a\nb": offset 12: unexpected '\n'; expected '.', '[', ':' or the end`},
		{`messages.0["abc`, `address "messages.0[\"abc": offset 15: bad quoted key: unexpected end of JSON input in string`},
		{`messages.0["abc"`, `address "messages.0[\"abc\"": offset 16: expected ']'`},
		{`messages.0["a\qb"]`, `address "messages.0[\"a\\qb\"]": offset 13: bad quoted key: invalid escape 'q' in string`},
		{`spans["a"x]`, `address "spans[\"a\"x]": offset 9: expected ']'`},
		{"foo.bar", `address "foo.bar": offset 0: unknown root "foo": expected messages, spans or an event index`},
		{"events.2", `address "events.2": offset 0: unknown root "events": expected messages, spans or an event index`},
		{"messagesX.2", `address "messagesX.2": offset 0: unknown root "messagesX": expected messages, spans or an event index`},
		{"2x.content", `address "2x.content": offset 0: unknown root "2x": expected messages, spans or an event index`},
		{".2", `address ".2": offset 0: expected messages, spans or an event index`},
		{"[2]", `address "[2]": offset 0: expected messages, spans or an event index`},
		{":0-1", `address ":0-1": offset 0: expected messages, spans or an event index`},
		{"spans", `address "spans": offset 5: expected '.' or '[' after spans`},
		{`spans[""]`, `address "spans[\"\"]": offset 5: empty span id`},
		{"spans..x", `address "spans..x": offset 6: empty segment`},
		// selectors
		{"messages.0.content:", `address "messages.0.content:": offset 19: expected a range start-end, a line L<n> or a box bbox-x1,y1,x2,y2 after ':'`},
		{"messages.0.content:abc", `address "messages.0.content:abc": offset 19: expected a range start-end, a line L<n> or a box bbox-x1,y1,x2,y2 after ':'`},
		{"messages.0.content:-1-3", `address "messages.0.content:-1-3": offset 19: expected a range start-end, a line L<n> or a box bbox-x1,y1,x2,y2 after ':'`},
		{"messages.0.content:5-3", `address "messages.0.content:5-3": offset 21: range end 3 is before its start 5`},
		{"messages.0.content:5", `address "messages.0.content:5": offset 20: expected '-' after the range start`},
		{"messages.0.content:5-", `address "messages.0.content:5-": offset 21: expected the range end after '-'`},
		{"messages.0.content:5-10x", `address "messages.0.content:5-10x": offset 23: unexpected 'x' after the selector`},
		{"messages.0.content:5-10.x", `address "messages.0.content:5-10.x": offset 23: unexpected '.' after the selector`},
		{"messages.0.content:0-5:L1", `address "messages.0.content:0-5:L1": offset 22: unexpected ':' after the selector`},
		{"messages.0.content:0-99999999999", `address "messages.0.content:0-99999999999": offset 21: number 99999999999 is too large`},
		{"messages.0.content:L-1", `address "messages.0.content:L-1": offset 20: expected a line number after 'L'`},
		{"messages.0.content:L", `address "messages.0.content:L": offset 20: expected a line number after 'L'`},
		{"messages.0.content:l3", `address "messages.0.content:l3": offset 19: expected a range start-end, a line L<n> or a box bbox-x1,y1,x2,y2 after ':'`},
		{"messages.0.content:L3 ", `address "messages.0.content:L3 ": offset 21: unexpected ' ' after the selector`},
		{"messages.0.content:bbox-1,2,3", `address "messages.0.content:bbox-1,2,3": offset 29: expected ',' and 4 numbers x1,y1,x2,y2 in a box`},
		{"messages.0.content:bbox-1,2,3,", `address "messages.0.content:bbox-1,2,3,": offset 30: expected a number in a box`},
		{"messages.0.content:bbox-1,2,3,4,5", `address "messages.0.content:bbox-1,2,3,4,5": offset 31: unexpected ',' after the selector`},
		{"messages.0.content:bbox-1.,2,3,4", `address "messages.0.content:bbox-1.,2,3,4": offset 26: expected digits after '.'`},
		{"messages.0.content:bbox--1,2,3,4", `address "messages.0.content:bbox--1,2,3,4": offset 24: expected a number in a box`},
		{"messages.0.content:bbox-5,0,1,1", `address "messages.0.content:bbox-5,0,1,1": offset 19: box corner x2,y2 (1,1) is not below and right of x1,y1 (5,0)`},
		{"messages.0.content:bbox-0,5,1,1", `address "messages.0.content:bbox-0,5,1,1": offset 19: box corner x2,y2 (1,1) is not below and right of x1,y1 (0,5)`},
		{"messages.0.content:bbox-0,0,1e3,1", `address "messages.0.content:bbox-0,0,1e3,1": offset 29: expected ',' and 4 numbers x1,y1,x2,y2 in a box`},
		{"messages.0.content:bbox-0,0,1," + strings.Repeat("9", 400), `address "messages.0.content:bbox-0,0,1,` + strings.Repeat("9", 400) + `": offset 30: number ` + strings.Repeat("9", 400) + ` is too large`},
		{"messages.0\xff", `address "messages.0\xff": offset 10: invalid UTF-8`},
	}
	for _, tc := range tests {
		a, err := ParseAddress(tc.in)
		if err == nil {
			t.Errorf("ParseAddress(%q) = %v, want error %s", tc.in, a, tc.err)
			continue
		}
		if err.Error() != tc.err {
			t.Errorf("ParseAddress(%q):\n got error %s\nwant error %s", tc.in, err, tc.err)
		}
		var ae *AddressError
		if !errors.As(err, &ae) || ae.Address != tc.in || ae.Offset < 0 || ae.Offset > len(tc.in) {
			t.Errorf("ParseAddress(%q): error %#v is not an *AddressError with an offset inside the address", tc.in, err)
		}
	}
}

// A hand-built address prints even when it is not valid, without panicking.
func TestAddressStringOfBuiltAddresses(t *testing.T) {
	a := SpanAddress("s.1", "attributes", "gen_ai.system", "", "x y", "\u2028")
	want := `spans["s.1"].attributes["gen_ai.system"][""]["x y"]["\u2028"]`
	if got := a.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	b, err := ParseAddress(want)
	if err != nil || !b.Equal(a) {
		t.Errorf("ParseAddress(%s) = %#v, %v; want %#v", want, b, err, a)
	}
	if !EventAddress(1).Equal(Address{Event: 1, Path: []string{}}) {
		t.Error("a nil and an empty path should be equal")
	}
	if EventAddress(1).Equal(EventAddress(2)) || EventAddress(1).Equal(SpanAddress("1")) ||
		EventAddress(1, "a").Equal(EventAddress(1, "b")) || EventAddress(1, "a").Equal(EventAddress(1, "a", "b")) {
		t.Error("different addresses compare equal")
	}
	r := EventAddress(1, "content")
	r.Sel = Selector{Kind: SelectRange, Start: 1, End: 2}
	if r.Equal(EventAddress(1, "content")) {
		t.Error("a selector should make addresses differ")
	}
}

// addrRand generates addresses and alternative spellings of them.
type addrRand struct{ *rand.Rand }

var segPool = []string{
	"content", "tool_calls", "function", "arguments", "name", "attributes", "0", "1", "12", "007",
	"a.b", "gen_ai.request.model", "", "with space", " ", "é", "日本", "😀", "a:b", "[x]", `q"uote`,
	`back\slash`, "\u2028", "tab\t", "L3", "bbox-1", "-", "x]y", "\x00", "\u200b", "'", "$ref", "a-b_c",
}

var floatPool = []float64{0, 1, 0.5, 0.125, 0.1, 0.3333333333333333, 10, 20, 200, 80, 123.456, 1e-7, 1e15, 1920}

func (r addrRand) address() Address {
	var a Address
	if r.Intn(4) == 0 {
		a.Root = RootSpans
		for a.Span == "" {
			a.Span = segPool[r.Intn(len(segPool))]
		}
	} else if r.Intn(3) == 0 {
		a.Event = r.Intn(maxAddressNumber)
	} else {
		a.Event = r.Intn(20)
	}
	for n := r.Intn(5); n > 0; n-- {
		a.Path = append(a.Path, segPool[r.Intn(len(segPool))])
	}
	switch r.Intn(4) {
	case 1:
		s, e := r.Intn(1000), r.Intn(1000)
		if s > e {
			s, e = e, s
		}
		a.Sel = Selector{Kind: SelectRange, Start: s, End: e}
	case 2:
		a.Sel = Selector{Kind: SelectLine, Line: r.Intn(100)}
	case 3:
		v := [4]float64{}
		for i := range v {
			v[i] = floatPool[r.Intn(len(floatPool))]
		}
		x := []float64{v[0], v[2]}
		y := []float64{v[1], v[3]}
		sort.Float64s(x)
		sort.Float64s(y)
		a.Sel = Selector{Kind: SelectBox, Box: Box{x[0], y[0], x[1], y[1]}}
	}
	return a
}

// spelling writes a in one of the accepted forms, picked at random.
func (r addrRand) spelling(a Address) string {
	var b strings.Builder
	step := func(seg string) {
		switch {
		case allDigits(seg) && r.Intn(2) == 0:
			b.WriteString("[" + seg + "]")
		case plainStep(seg) && r.Intn(3) > 0:
			b.WriteString("." + seg)
		default:
			q, _ := json.Marshal(seg) // encoding/json escapes <, > and & too: still valid
			b.WriteString("[" + string(q) + "]")
		}
	}
	if a.Root == RootSpans {
		b.WriteString("spans")
		step(a.Span)
	} else {
		idx := strings.Repeat("0", r.Intn(2)) + strconv.Itoa(a.Event)
		switch r.Intn(3) {
		case 0:
			b.WriteString("messages." + idx)
		case 1:
			b.WriteString("messages[" + idx + "]")
		default:
			b.WriteString(idx)
		}
	}
	for _, seg := range a.Path {
		step(seg)
	}
	canonical := a.String()
	if i := strings.LastIndex(canonical, ":"); a.Sel.Kind != SelectValue && i >= 0 {
		sel := canonical[i:]
		if a.Sel.Kind == SelectBox && r.Intn(2) == 0 {
			sel = strings.ReplaceAll(sel, ",", ", ")
		}
		b.WriteString(sel)
	}
	return b.String()
}

// TestAddressRoundTrip: printing a generated address and parsing it back
// gives the same address, from the canonical, the relative and random other
// spellings; so parse∘print∘parse = parse on every form.
func TestAddressRoundTrip(t *testing.T) {
	r := addrRand{rand.New(rand.NewSource(1))}
	for i := 0; i < 20000; i++ {
		a := r.address()
		for _, s := range []string{a.String(), a.Relative(), r.spelling(a), r.spelling(a)} {
			b, err := ParseAddress(s)
			if err != nil {
				t.Fatalf("ParseAddress(%q) (printed from %#v): %v", s, a, err)
			}
			if !b.Equal(a) {
				t.Fatalf("ParseAddress(%q) = %#v, want %#v", s, b, a)
			}
			if b.String() != a.String() {
				t.Fatalf("ParseAddress(%q).String() = %q, want %q", s, b.String(), a.String())
			}
		}
	}
}

// TestAddressRandomStrings parses random strings over the address alphabet:
// no panic, and whatever parses prints to a form that parses back equal.
func TestAddressRandomStrings(t *testing.T) {
	alphabet := []string{"messages", "spans", ".", "[", "]", ":", "\"", "\\", "-", ",", "L", "bbox-", "0", "1", "9", "00",
		"a", "é", "😀", " ", "x.y", `"a.b"`, "\\u0041", "\n"}
	r := rand.New(rand.NewSource(2))
	parsed := 0
	for i := 0; i < 200000; i++ {
		var b strings.Builder
		for n := r.Intn(12); n >= 0; n-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		checkParsePrint(t, b.String())
		if _, err := ParseAddress(b.String()); err == nil {
			parsed++
		}
	}
	if parsed < 1000 {
		t.Errorf("only %d random strings parsed: the generator tests little", parsed)
	}
}

func checkParsePrint(t *testing.T, s string) {
	t.Helper()
	a, err := ParseAddress(s)
	if err != nil {
		var ae *AddressError
		if !errors.As(err, &ae) || ae.Offset < 0 || ae.Offset > len(s) {
			t.Fatalf("ParseAddress(%q): error %v has no offset inside the address", s, err)
		}
		return
	}
	for _, form := range []string{a.String(), a.Relative()} {
		b, err := ParseAddress(form)
		if err != nil {
			t.Fatalf("ParseAddress(%q) = %#v, but its printed form %q fails: %v", s, a, form, err)
		}
		if !b.Equal(a) {
			t.Fatalf("ParseAddress(%q) = %#v, but ParseAddress(%q) = %#v", s, a, form, b)
		}
		if b.String() != a.String() {
			t.Fatalf("printing is not stable: %q then %q", a.String(), b.String())
		}
	}
}

// testTrace is a trace with every kind of value an address can reach.
func testTrace() *Trace {
	return &Trace{
		ID: "t1",
		Events: []Event{
			{Role: "user", Content: TextContent("Hello, X 😀 世界 end")},
			{Role: "assistant", Content: Content{Kind: ContentNull}, ToolCalls: []ToolCall{{
				ID: "c1", Type: "function",
				Function: Function{Name: "send_email", Arguments: json.RawMessage(
					`{"to":"bob@x.com","body":"line0\r\nline1\nline2","a.b":1,"nested":{"k":[1,2,3]},"html":"<b>&"}`)},
			}}},
			{Role: "tool", Content: TextContent("ok\r\n"), ToolCallID: "c1"},
			{Role: "user", Content: Content{Kind: ContentParts, Parts: []Part{
				{Type: "text", Text: "look"},
				{Type: "image_url", Extra: Fields{{Key: "image_url", Value: json.RawMessage(`{"url":"data:image/png;base64,AAAA"}`)}}},
			}}},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c2", Type: "function",
				Function: Function{Name: "f", Arguments: json.RawMessage(`"not json"`)}}}},
			{Role: "user", Extra: Fields{{Key: "metadata", Value: json.RawMessage(`{"x":1}`)}}},
			{Role: "user", Content: TextContent("local_base64_img: data:image/png;base64,AAAA")},
		},
		Spans: []Span{
			{ID: "s1", Name: "root", Attributes: json.RawMessage(`{"gen_ai.system":"openai","plain":"v","nested":{"a":1}}`)},
			{ID: "s2", Attributes: json.RawMessage(`{"gen_ai.request.model":"gpt","x.y":{"z":1},"x.y.z":2,"t.":3}`)},
			{ID: "id.with.dots", ParentID: "s1", Inputs: json.RawMessage(`{"q":"hi"}`), Value: json.RawMessage(`"a\nb"`)},
		},
	}
}

func TestResolve(t *testing.T) {
	tr := testTrace()
	event0 := `{"role":"user","content":"Hello, X 😀 世界 end"}`
	part1 := `{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}`
	tests := []struct {
		addr       string
		value      string // Resolved.Value
		text       string // Resolved.Text
		start, end int
	}{
		{"messages.0", event0, "", 0, 0},
		{"messages[0]", event0, "", 0, 0},
		{"0", event0, "", 0, 0},
		{"messages.0.role", `"user"`, "", 0, 0},
		{"0.content", `"Hello, X 😀 世界 end"`, "", 0, 0},
		// ranges count code points: 😀 is 4 bytes and 2 UTF-16 units, 世 and 界 3 bytes each
		{"messages.0.content:7-8", `"Hello, X 😀 世界 end"`, "X", 7, 8},
		{"messages.0.content:9-10", `"Hello, X 😀 世界 end"`, "😀", 9, 10},
		{"messages.0.content:11-13", `"Hello, X 😀 世界 end"`, "世界", 11, 13},
		{"messages.0.content:14-17", `"Hello, X 😀 世界 end"`, "end", 14, 17},
		{"messages.0.content:0-17", `"Hello, X 😀 世界 end"`, "Hello, X 😀 世界 end", 0, 17},
		{"messages.0.content:17-17", `"Hello, X 😀 世界 end"`, "", 17, 17},
		{"messages.0.content:L0", `"Hello, X 😀 世界 end"`, "Hello, X 😀 世界 end", 0, 17},
		// fields inside the arguments object
		{"messages.1.content", `null`, "", 0, 0},
		{"messages.1.tool_calls.0.id", `"c1"`, "", 0, 0},
		{"messages.1.tool_calls.0.function.arguments.to", `"bob@x.com"`, "", 0, 0},
		{"1.tool_calls.0.function.name:0-4", `"send_email"`, "send", 0, 4},
		{"messages[1].tool_calls[0].function.arguments.nested.k[2]", `3`, "", 0, 0},
		{`messages.1.tool_calls.0.function.arguments["a.b"]`, `1`, "", 0, 0},
		{"messages.1.tool_calls.0.function.arguments.a.b", `1`, "", 0, 0}, // dotted key found by joining steps
		{"messages.1.tool_calls.0.function.arguments.html:0-4", `"<b>&"`, "<b>&", 0, 4},
		// lines: \r\n is one break; 0-based
		{"messages.1.tool_calls.0.function.arguments.body:L0", `"line0\r\nline1\nline2"`, "line0", 0, 5},
		{"messages.1.tool_calls.0.function.arguments.body:L1", `"line0\r\nline1\nline2"`, "line1", 7, 12},
		{"messages.1.tool_calls.0.function.arguments.body:L2", `"line0\r\nline1\nline2"`, "line2", 13, 18},
		{"messages.2.content:L0", `"ok\r\n"`, "ok", 0, 2},
		{"messages.2.content:L1", `"ok\r\n"`, "", 4, 4},
		{"messages.2.content:2-4", `"ok\r\n"`, "\r\n", 2, 4},
		// lines of a value that is not a string: its indented JSON
		{"messages.1.tool_calls.0.function.arguments.nested:L1", `{"k":[1,2,3]}`, `  "k": [`, 2, 10},
		{"messages.1.tool_calls.0.function.arguments.nested.k.0:L0", `1`, "1", 0, 1},
		// parts and boxes
		{"messages.3.content.0.text", `"look"`, "", 0, 0},
		{"messages.3.content.0.text:1-3", `"look"`, "oo", 1, 3},
		{"messages.3.content.1", part1, "", 0, 0},
		{"messages.3.content.1:bbox-10,20,200,80", part1, "", 0, 0},
		{"messages.6.content:bbox-0.1,0.2,0.3,0.4", `"local_base64_img: data:image/png;base64,AAAA"`, "", 0, 0},
		// arguments that are not JSON stay a string
		{"messages.4.tool_calls.0.function.arguments", `"not json"`, "", 0, 0},
		{"messages.4.tool_calls.0.function.arguments:4-8", `"not json"`, "json", 4, 8},
		{"messages.5.metadata.x", `1`, "", 0, 0},
		// spans
		{"spans.s1", `{"id":"s1","name":"root","attributes":{"gen_ai.system":"openai","plain":"v","nested":{"a":1}}}`, "", 0, 0},
		{`spans.s1.attributes["gen_ai.system"]`, `"openai"`, "", 0, 0},
		{"spans.s1.attributes.gen_ai.system", `"openai"`, "", 0, 0},
		{"spans.s1.attributes.gen_ai.system:0-4", `"openai"`, "open", 0, 4},
		{"spans.s1.attributes.nested.a", `1`, "", 0, 0},
		{`spans["id.with.dots"].inputs.q`, `"hi"`, "", 0, 0},
		{`spans["id.with.dots"].parent_id`, `"s1"`, "", 0, 0},
		{`spans["id.with.dots"].value:L1`, `"a\nb"`, "b", 2, 3},
		{"spans.s2.attributes.gen_ai.request.model", `"gpt"`, "", 0, 0},
		{"spans.s2.attributes.gen_ai.request.model:1-3", `"gpt"`, "pt", 1, 3},
		{"spans.s2.attributes.x.y.z", `2`, "", 0, 0}, // the longest joined key wins
		{`spans.s2.attributes["x.y"].z`, `1`, "", 0, 0},
		{`spans.s2.attributes.t[""]`, `3`, "", 0, 0},
	}
	for _, tc := range tests {
		a, err := ParseAddress(tc.addr)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.addr, err)
			continue
		}
		r, err := tr.Resolve(a)
		if err != nil {
			t.Errorf("Resolve(%s): %v", tc.addr, err)
			continue
		}
		if string(r.Value) != tc.value || r.Text != tc.text || r.Start != tc.start || r.End != tc.end {
			t.Errorf("Resolve(%s) = value %s, text %q [%d,%d); want value %s, text %q [%d,%d)",
				tc.addr, r.Value, r.Text, r.Start, r.End, tc.value, tc.text, tc.start, tc.end)
		}
		if a.Sel.Kind == SelectBox && r.Box != a.Sel.Box {
			t.Errorf("Resolve(%s).Box = %v, want %v", tc.addr, r.Box, a.Sel.Box)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	tr := testTrace()
	tests := []struct{ addr, err string }{
		{"messages.7", "messages.7: no such event (the trace has 7 events)"},
		{"messages.2147483647.content", "messages.2147483647: no such event (the trace has 7 events)"},
		{"messages.1.tool_calls.1", "messages.1.tool_calls.1: index out of range (messages.1.tool_calls has 1 element)"},
		{"messages.1.tool_calls.99999999999999999999", "messages.1.tool_calls.99999999999999999999: index out of range (messages.1.tool_calls has 1 element)"},
		{"messages.1.tool_calls.x", "messages.1.tool_calls.x: index must be a number (messages.1.tool_calls is an array)"},
		{"messages.1.tool_calls.0.function.arguments.cc",
			`messages.1.tool_calls.0.function.arguments.cc: no such field (messages.1.tool_calls.0.function.arguments has to, body, "a.b", nested, html)`},
		{"messages.1.tool_calls.0.function.arguments.a.c",
			`messages.1.tool_calls.0.function.arguments.a: no such field (messages.1.tool_calls.0.function.arguments has to, body, "a.b", nested, html)`},
		{"messages.1.content.x", "messages.1.content.x: no such field (messages.1.content is null)"},
		{"messages.1.role.x", "messages.1.role.x: no such field (messages.1.role is a string)"},
		{"messages.4.tool_calls.0.function.arguments.to", "messages.4.tool_calls.0.function.arguments.to: no such field (messages.4.tool_calls.0.function.arguments is a string)"},
		{"messages.5.content", "messages.5.content: no such field (messages.5 has role, metadata)"},
		{"messages.0.content:10-18", "messages.0.content:10-18: range ends past the end of the string (17 code points)"},
		{"messages.0.content:18-18", "messages.0.content:18-18: range ends past the end of the string (17 code points)"},
		{"messages.3.content.0.text:0-5", "messages.3.content.0.text:0-5: range ends past the end of the string (4 code points)"},
		{"messages.1.tool_calls:0-3", "messages.1.tool_calls:0-3: a character range needs a string, not an array"},
		{"messages.1.content:0-0", "messages.1.content:0-0: a character range needs a string, not null"},
		{"messages.1:0-1", "messages.1:0-1: a character range needs a string, not an object"},
		{"messages.5.metadata.x:0-1", "messages.5.metadata.x:0-1: a character range needs a string, not a number"},
		{"messages.0.content:L1", "messages.0.content:L1: no line 1 (the string has 1 line)"},
		{"messages.1.tool_calls.0.function.arguments.body:L3", "messages.1.tool_calls.0.function.arguments.body:L3: no line 3 (the string has 3 lines)"},
		{"messages.1.tool_calls.0.function.arguments.nested:L7", "messages.1.tool_calls.0.function.arguments.nested:L7: no line 7 (its indented JSON has 7 lines)"},
		{"messages.3.content.0:bbox-0,0,1,1", "messages.3.content.0:bbox-0,0,1,1: a box needs an image part or an image string, not an object"},
		{"messages.3.content:bbox-0,0,1,1", "messages.3.content:bbox-0,0,1,1: a box needs an image part or an image string, not an array"},
		{"spans.nope", "spans.nope: no span with this id (the trace has 3 spans)"},
		{"spans.s1.attributes.missing", `spans.s1.attributes.missing: no such field (spans.s1.attributes has "gen_ai.system", plain, nested)`},
		{"spans.s2.attributes.gen_ai.request", `spans.s2.attributes.gen_ai: no such field (spans.s2.attributes has "gen_ai.request.model", "x.y", "x.y.z", "t.")`},
		{`spans["id.with.dots"].outputs`, `spans["id.with.dots"].outputs: no such field (spans["id.with.dots"] has id, parent_id, inputs, value)`},
	}
	for _, tc := range tests {
		a, err := ParseAddress(tc.addr)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.addr, err)
			continue
		}
		r, err := tr.Resolve(a)
		if err == nil {
			t.Errorf("Resolve(%s) = %+v, want error %s", tc.addr, r, tc.err)
			continue
		}
		if err.Error() != tc.err {
			t.Errorf("Resolve(%s):\n got error %s\nwant error %s", tc.addr, err, tc.err)
		}
	}
	// Hand-built addresses that ParseAddress would refuse fail cleanly.
	for _, a := range []Address{
		EventAddress(-1),
		{Path: []string{"content"}, Sel: Selector{Kind: SelectRange, Start: 5, End: 2}},
		{Path: []string{"content"}, Sel: Selector{Kind: SelectRange, Start: -1, End: 2}},
		{Path: []string{"content"}, Sel: Selector{Kind: SelectLine, Line: -1}},
		{Root: 9},
		{Sel: Selector{Kind: 9}},
	} {
		if r, err := tr.Resolve(a); err == nil {
			t.Errorf("Resolve(%#v) = %+v, want an error", a, r)
		}
	}
	var empty Trace
	if _, err := empty.Resolve(EventAddress(0)); err == nil || err.Error() != "messages.0: no such event (the trace has 0 events)" {
		t.Errorf("Resolve on an empty trace: %v", err)
	}
}

// Resolve encodes only the event concerned: an unrelated event whose JSON
// cannot be walked (a hand-built broken raw value) does not matter.
func TestResolveEncodesOnlyTheEvent(t *testing.T) {
	tr := testTrace()
	tr.Events[5].Extra = Fields{{Key: "metadata", Value: json.RawMessage(`{broken`)}}
	a, _ := ParseAddress("messages.0.content:7-8")
	if r, err := tr.Resolve(a); err != nil || r.Text != "X" {
		t.Errorf("Resolve(%s) = %+v, %v", a, r, err)
	}
	a, _ = ParseAddress("messages.5.metadata.x")
	if _, err := tr.Resolve(a); err == nil {
		t.Errorf("Resolve(%s) on a broken event: no error", a)
	}
}

// readJSONL returns the lines of a corpus file that are JSON objects.
func readJSONL(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("corpus file missing: %v", err)
	}
	var rows []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// traceOf decodes a raw JSON list of events into a Trace.
func traceOf(t *testing.T, events json.RawMessage) *Trace {
	t.Helper()
	s := jsonscan.New(events)
	evs, err := DecodeEvents(s, "messages")
	if err != nil {
		t.Fatal(err)
	}
	return &Trace{Events: evs}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// Explorer's own annotation addresses resolve against the traces they annotate.
func TestResolveCorpusAnnotations(t *testing.T) {
	found := map[string]bool{}
	for _, name := range []string{"with_annotations.jsonl", "sample_data.jsonl"} {
		for _, row := range readJSONL(t, filepath.Join(testcorpus.Dir(t), "openai/explorer", name)) {
			var anns []struct{ Address string }
			if row["annotations"] == nil || json.Unmarshal(row["annotations"], &anns) != nil {
				continue
			}
			var msgs []json.RawMessage
			if err := json.Unmarshal(row["messages"], &msgs); err != nil {
				t.Fatal(err)
			}
			tr := traceOf(t, row["messages"])
			for _, ann := range anns {
				found[ann.Address] = true
				a, err := ParseAddress(ann.Address)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				r, err := tr.Resolve(a)
				if err != nil {
					t.Errorf("%s: Resolve(%s): %v", name, ann.Address, err)
					continue
				}
				switch a.Sel.Kind {
				case SelectValue:
					if len(a.Path) == 0 && !sameJSON(t, r.Value, msgs[a.Event]) {
						t.Errorf("%s: %s resolves to %s, want the message %s", name, ann.Address, r.Value, msgs[a.Event])
					}
				case SelectLine:
					var m struct{ Content string }
					if err := json.Unmarshal(msgs[a.Event], &m); err != nil {
						t.Fatal(err)
					}
					if want := strings.Split(m.Content, "\n")[a.Sel.Line]; r.Text != want {
						t.Errorf("%s: %s = %q, want %q", name, ann.Address, r.Text, want)
					}
				}
			}
		}
	}
	for _, want := range []string{"messages[0]", "messages[2].content:L0"} {
		if !found[want] {
			t.Errorf("annotation %q not found in the corpus", want)
		}
	}
}

// Every line of every string content in line_numbers.jsonl (which mixes "\n"
// and "\r\n") resolves to what a plain split gives, and one past the last
// line is an error.
func TestResolveCorpusLines(t *testing.T) {
	rows := readJSONL(t, filepath.Join(testcorpus.Dir(t), "openai/explorer/line_numbers.jsonl"))
	checked, crlf := 0, false
	for _, row := range rows {
		if row["messages"] == nil {
			continue
		}
		var msgs []struct{ Content any }
		if err := json.Unmarshal(row["messages"], &msgs); err != nil {
			t.Fatal(err)
		}
		tr := traceOf(t, row["messages"])
		for i, m := range msgs {
			content, ok := m.Content.(string)
			if !ok {
				continue
			}
			crlf = crlf || strings.Contains(content, "\r\n")
			runes := []rune(content)
			lines := strings.Split(content, "\n")
			for n := 0; n <= len(lines); n++ {
				addr := "messages[" + strconv.Itoa(i) + "].content:L" + strconv.Itoa(n)
				a, err := ParseAddress(addr)
				if err != nil {
					t.Fatal(err)
				}
				r, err := tr.Resolve(a)
				if n == len(lines) {
					if err == nil {
						t.Errorf("Resolve(%s) past the last line: no error", addr)
					}
					continue
				}
				if err != nil {
					t.Errorf("Resolve(%s): %v", addr, err)
					continue
				}
				want := strings.TrimSuffix(lines[n], "\r")
				if n == len(lines)-1 {
					want = lines[n] // the last line has no break after it
				}
				if r.Text != want || string(runes[r.Start:r.End]) != want {
					t.Errorf("Resolve(%s) = %q [%d,%d), want %q", addr, r.Text, r.Start, r.End, want)
				}
				checked++
			}
		}
	}
	if checked < 50 || !crlf {
		t.Fatalf("checked %d lines (CRLF seen: %v): line_numbers.jsonl is not what this test expects", checked, crlf)
	}
}

type conformanceCase struct {
	Name    string
	Trace   json.RawMessage
	Past    []json.RawMessage
	Pending []json.RawMessage
	Expect  struct {
		Ranges       []string
		RangesAbsent []string `json:"ranges_absent"`
		Masked       map[string]string
	}
}

func conformanceCases(t *testing.T) []conformanceCase {
	t.Helper()
	dir := testcorpus.Conformance(t, "invariant")
	files, err := filepath.Glob(filepath.Join(dir, "test_*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("conformance suite missing under %s: %v", dir, err)
	}
	var all []conformanceCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []conformanceCase
		if err := json.Unmarshal(data, &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, cases...)
	}
	return all
}

func (c conformanceCase) trace(t *testing.T) *Trace {
	raw := c.Trace
	if raw == nil {
		b, err := json.Marshal(append(append([]json.RawMessage{}, c.Past...), c.Pending...))
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return traceOf(t, raw)
}

// The addresses Invariant's rules report in the conformance suite parse,
// print back unchanged (they are canonical relative forms), and resolve to
// the text the upstream tests say they cover.
func TestResolveConformanceRanges(t *testing.T) {
	wantText := map[string]string{
		"0.content:7-8":                    "X",
		"0.content:11-16":                  "X123Y",
		"0.content:37-42":                  "X456Y",
		"0.content:55-67":                  "bob@mail.com",
		"1.content:15-30":                  "alice@gmail.com",
		"0.tool_calls.0.function.name:0-3": "sen",
	}
	seen := 0
	for _, c := range conformanceCases(t) {
		for _, addr := range append(append([]string{}, c.Expect.Ranges...), c.Expect.RangesAbsent...) {
			a, err := ParseAddress(addr)
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			if a.Relative() != addr || a.String() != "messages."+addr {
				t.Errorf("%s: %q prints as %q / %q", c.Name, addr, a.Relative(), a.String())
			}
			r, err := c.trace(t).Resolve(a)
			if err != nil {
				t.Errorf("%s: Resolve(%s): %v", c.Name, addr, err)
				continue
			}
			seen++
			if want, ok := wantText[addr]; ok && r.Text != want {
				t.Errorf("%s: %s = %q, want %q", c.Name, addr, r.Text, want)
			}
		}
		// masked: every run of '*' is a range of the original string; resolving
		// that range and masking it rebuilds the expected value.
		for path, masked := range c.Expect.Masked {
			tr := c.trace(t)
			base, err := ParseAddress(path)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := tr.Resolve(base)
			if err != nil {
				t.Fatalf("%s: Resolve(%s): %v", c.Name, path, err)
			}
			var s string
			if err := json.Unmarshal(orig.Value, &s); err != nil {
				t.Fatal(err)
			}
			got := []rune(s)
			m := []rune(masked)
			for i := 0; i < len(m); i++ {
				if m[i] != '*' {
					continue
				}
				j := i
				for j < len(m) && m[j] == '*' {
					j++
				}
				a, err := ParseAddress(path + ":" + strconv.Itoa(i) + "-" + strconv.Itoa(j))
				if err != nil {
					t.Fatal(err)
				}
				r, err := tr.Resolve(a)
				if err != nil {
					t.Fatalf("%s: Resolve(%s): %v", c.Name, a, err)
				}
				if utf8.RuneCountInString(r.Text) != j-i || r.Start != i || r.End != j {
					t.Errorf("%s: %s = %q [%d,%d)", c.Name, a, r.Text, r.Start, r.End)
				}
				for k := r.Start; k < r.End; k++ {
					got[k] = '*'
				}
				seen++
				i = j
			}
			if string(got) != masked {
				t.Errorf("%s: masking %s gives %q, want %q", c.Name, path, string(got), masked)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d conformance ranges checked", seen)
	}
}

// fuzzSeeds are every form above plus the addresses found in the
// conformance suite and the corpus annotations.
func fuzzSeeds(t testing.TB) []string {
	seeds := []string{
		"messages.2", "messages[2]", "2", "messages.02", "messages.3.content",
		"messages.2.tool_calls.0.function.arguments.to", "messages[2].tool_calls[0].function.arguments.to",
		"messages.0.content:5-10", "messages.2.content:L3", "messages[2].content:L0", "messages.4.content.1:bbox-10,20,200,80",
		"messages[4].content:bbox-0.10, 0.25,\t0.5,0.750", "spans.abc", "spans.abc.attributes.key", `spans["id with . in it"]`,
		`spans["a"].attributes["gen_ai.request.model"]`, `messages.0.x["a\"b\\c\u00e9"]`, `messages.0.metadata[""]`,
		"0.tool_calls.0.function.name:0-3", "messages.x", "messages.0.content:5-3", "messages.0.content:L-1", "messages..x",
		"foo.bar", "messages[2]x", "messages.0.content:bbox-5,0,1,1", `messages.0["abc`, "messages.0\xff", "",
		"spans.s1.attributes.gen_ai.system:0-4", `messages.0.x["\ud83d\ude00"]`, `messages.0.x["\ud800"]`,
	}
	files, _ := filepath.Glob(filepath.Join(testcorpus.Conformance(t, "invariant"), "test_*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []conformanceCase
		if err := json.Unmarshal(data, &cases); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			seeds = append(seeds, c.Expect.Ranges...)
			seeds = append(seeds, c.Expect.RangesAbsent...)
			for k := range c.Expect.Masked {
				seeds = append(seeds, k)
			}
		}
	}
	seeds = append(seeds, "messages[0]", "messages[2].content:L0") // the corpus annotations
	return seeds
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	tr := testTrace()
	f.Fuzz(func(t *testing.T, s string) {
		checkParsePrint(t, s)
		if a, err := ParseAddress(s); err == nil {
			tr.Resolve(a) // must not panic
		}
	})
}
