package upstreamtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"unicode/utf8"
)

// Turn is one scripted answer of the model.
type Turn struct {
	// Text is the answer's text ("" for none). Streamed, it arrives in
	// several deltas.
	Text string
	// Calls are the tool calls the answer makes, in order.
	Calls []Call
	// InputTokens and OutputTokens are the usage reported (0: a count
	// derived from the request and answer sizes).
	InputTokens, OutputTokens int64
	// Error, when set, makes the turn answer this error in the provider's
	// own format instead of a completion.
	Error *Error
}

// Call is one tool call of a scripted turn.
type Call struct {
	// ID is the call's id. "" gets a deterministic id of the provider's
	// shape (call_..., toolu_...); Gemini sends no id when ID is "", as
	// the Gemini API does not.
	ID   string
	Name string
	// Arguments is the JSON object the model writes, byte for byte: the
	// exact text of OpenAI's arguments string and of Anthropic's streamed
	// partial_json, parsed into an object where the API sends one.
	Arguments string
}

// Error is an upstream failure a turn answers with.
type Error struct {
	Status  int    // HTTP status, e.g. 500 or 429
	Message string // the provider's message text
}

// Script is a conversation's answers: the answer to a request is the turn
// whose index is the number of assistant (Gemini: model) messages the
// request holds, the last turn once the script is exhausted. A script
// answers by the conversation's state, not by call order, so concurrent
// conversations share one fake.
type Script []Turn

// WeatherScript is the usual two-turn agent run: the model asks for
// get_weather({"city":"Paris"}), then answers with text once it has the
// tool's output.
func WeatherScript() Script {
	return Script{
		{Calls: []Call{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Text: "It is 18 °C and cloudy in Paris — a light jacket will do."},
	}
}

// AgentScript is three turns that catch careless stream handling: text and
// two interleaved calls whose arguments hold \u escapes and escaped
// quotes; then a call with an id given by the script (Gemini's only id);
// then text with multi-byte runes, among them "Paris".
func AgentScript(p Provider) Script {
	id := map[Provider]string{OpenAI: "call_paris_1", Anthropic: "toolu_01Paris", Gemini: "fc-paris-1"}[p]
	return Script{
		{Text: "Let me check both.", InputTokens: 120, OutputTokens: 31, Calls: []Call{
			{Name: "get_weather", Arguments: `{"city":"S\u00e3o Paulo \"SP\""}`},
			{Name: "get_time", Arguments: `{"timezone":"America/Sao_Paulo"}`},
		}},
		{InputTokens: 210, OutputTokens: 12, Calls: []Call{{ID: id, Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Text: "São Paulo: 18 °C, cloudy, 14:05 ☁️. Paris: 18 °C 🌦 — take a jacket.", InputTokens: 260, OutputTokens: 40},
	}
}

// turn picks the answer for a request holding n assistant messages.
func (s Script) turn(n int) (Turn, int) {
	if len(s) == 0 {
		return Turn{Text: "OK"}, 0
	}
	if n >= len(s) {
		n = len(s) - 1
	}
	return s[n], n
}

// callID is the id a call gets when the script gives none: stable for a
// turn and position, so two runs of one script send the same ids back.
func callID(prefix string, n, turn, i int, c Call) string {
	if c.ID != "" {
		return c.ID
	}
	return prefix + token(fmt.Sprintf("%d/%d/%s", turn, i, c.Name), n)
}

// token is n characters of base62 derived from seed.
func token(seed string, n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	h := fnv.New64a()
	h.Write([]byte(seed))
	x := h.Sum64()
	b := make([]byte, n)
	for i := range b {
		if x == 0 {
			h.Write([]byte{byte(i)})
			x = h.Sum64()
		}
		b[i] = alphabet[x%62]
		x /= 62
	}
	return string(b)
}

// parseArguments checks that a call's arguments are a JSON object.
func parseArguments(c Call) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &m); err != nil || m == nil {
		return nil, fmt.Errorf("upstreamtest: call %s: arguments %q are not a JSON object", c.Name, c.Arguments)
	}
	return m, nil
}

// SplitText cuts text into the deltas a model streams: pieces of 1 to 7
// bytes, cut only between runes, some of them inside words.
func SplitText(s string) []string {
	sizes := [...]int{3, 1, 6, 2, 7, 4, 5}
	var out []string
	for i := 0; s != ""; i++ {
		n := min(sizes[i%len(sizes)], len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// SplitArguments cuts a tool call's arguments text where a streaming
// parser is most easily caught out: right after the opening brace, inside
// every string (between the two halves of a key or value), between a
// backslash and the character it escapes, and in the middle of every \u
// escape. Concatenated, the pieces are the text again.
func SplitArguments(s string) []string {
	var cuts []int
	inString := false
	start := 0 // where the current string's content began
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 0 && c == '{':
			cuts = append(cuts, 1)
		case !inString && c == '"':
			inString, start = true, i+1
		case inString && c == '\\':
			cuts = append(cuts, i+1) // between the backslash and what it escapes
			if i+1 < len(s) && s[i+1] == 'u' {
				cuts = append(cuts, i+4) // \u00|e9
				i += 5
			} else {
				i++
			}
		case inString && c == '"':
			inString = false
			if mid := start + (i-start)/2; mid > start && mid < i {
				cuts = append(cuts, mid)
			}
		}
	}
	var out []string
	last := 0
	slices.Sort(cuts)
	for _, c := range slices.Compact(cuts) {
		if c <= last || c >= len(s) {
			continue
		}
		out = append(out, s[last:c])
		last = c
	}
	return append(out, s[last:])
}

// usage is the token counts reported for a turn.
func (t Turn) usage(requestBytes int) (in, out int64) {
	in, out = t.InputTokens, t.OutputTokens
	if in == 0 {
		in = int64(requestBytes/4 + 1)
	}
	if out == 0 {
		n := len(t.Text)
		for _, c := range t.Calls {
			n += len(c.Name) + len(c.Arguments)
		}
		out = int64(n/4 + 1)
	}
	return in, out
}
