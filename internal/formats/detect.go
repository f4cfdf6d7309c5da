// Package formats picks the format of an input and opens a streaming decoder
// for it. Each format lives in a package of its own below this one.
package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lookout-dev/lookout/internal/formats/bedrock"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/formats/mlflow"
	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/formats/snorkel"
	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// Format names an input format.
type Format string

const (
	Auto      Format = "auto"
	Invariant Format = "invariant" // OpenAI/Invariant events, Explorer JSONL, tau-bench, SWE-agent .traj
	Snorkel   Format = "snorkel"   // hierarchical step traces
	MLflow    Format = "mlflow"    // MLflow traces
	Bedrock   Format = "bedrock"   // AWS Bedrock agent event streams
	OTel      Format = "otel"      // OpenTelemetry: OTLP JSON, SDK span dumps, Langfuse exports
)

// Readable lists the formats Lookout decodes, for flags and help texts.
var Readable = []Format{Invariant, Snorkel, MLflow, Bedrock, OTel}

// Parse checks a format name given on the command line.
func Parse(name string) (Format, error) {
	f := Format(strings.ToLower(name))
	if f == Auto {
		return f, nil
	}
	for _, r := range Readable {
		if f == r {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want auto, invariant, snorkel, mlflow, bedrock or otel)", name)
}

// SniffSize is how much of an input Detect looks at.
const SniffSize = 64 << 10

// Open returns a decoder for r. With Auto the format is detected from the
// first bytes; an input in a format Lookout knows of but cannot read yet, or
// in none, gives a *decoding.Unsupported naming it.
func Open(r io.Reader, file string, f Format) (decoding.Decoder, Format, error) {
	br := bufio.NewReaderSize(r, SniffSize)
	if f == Auto || f == "" {
		head, _ := br.Peek(SniffSize)
		var err error
		if f, err = Detect(head); err != nil {
			if len(head) < SniffSize {
				if te := truncated(head, file); te != nil {
					return nil, "", te
				}
			}
			if u, ok := err.(*decoding.Unsupported); ok {
				u.File = file
			}
			return nil, "", err
		}
	}
	switch f {
	case Invariant:
		return invariant.NewDecoder(br, file), f, nil
	case Snorkel:
		return snorkel.NewDecoder(br, file), f, nil
	case MLflow:
		return mlflow.NewDecoder(br, file), f, nil
	case Bedrock:
		return bedrock.NewDecoder(br, file), f, nil
	case OTel:
		return otlp.NewDecoder(br, file), f, nil
	}
	return nil, "", fmt.Errorf("unknown format %q", f)
}

// truncated is the error for a whole input that ends inside its first JSON
// value before its format could be told: where it ends, not that the format
// is unknown. nil when the input is not such.
func truncated(whole []byte, file string) error {
	sc := jsonscan.New(whole)
	if sc.Peek() != jsonscan.Object && sc.Peek() != jsonscan.Array {
		return nil
	}
	var se *jsonscan.Error
	if err := sc.Skip(); err == nil || !errors.As(err, &se) || se.Offset < len(bytes.TrimRight(whole, " \t\r\n")) {
		return nil
	}
	line, col := jsonscan.LineCol(whole, se.Offset)
	return &decoding.Error{File: file, Line: line, Col: col, Trace: -1,
		Msg: "unexpected end of input: the file ends inside its first JSON value, before its format can be told (" + se.Msg + ")"}
}

// Detect names the format of an input from its first bytes.
func Detect(head []byte) (Format, error) {
	sn := sniff(head)
	has := func(keys ...string) bool {
		for _, k := range keys {
			if !sn.keys[k] {
				return false
			}
		}
		return true
	}
	unsupported := func(name, why string) (Format, error) {
		return "", &decoding.Unsupported{Format: name, Why: why}
	}
	switch sn.top {
	case '{':
		switch {
		case has("resourceSpans") || has("resource_spans"):
			return OTel, nil // OTLP JSON export request
		case has("trace", "observations"):
			return OTel, nil // Langfuse trace export
		case has("messages"):
			// Invariant and canonical traces may carry a span tree beside
			// their events; MLflow and OTel span dumps never have messages.
			return Invariant, nil
		case has("events") && (has("events[].role") || has("events[].content") || has("spans") || has("metadata") || has("annotations") || has("index")):
			return Invariant, nil // canonical traces, read as Invariant's with events for messages
		case has("spans") && (has("final_output") || has("spans[].parent") || has("spans[].context.trace_id") && !has("spans[].parent_id")):
			return OTel, nil // SDK span dump (any-agent)
		case has("context", "name") && (has("kind") || has("parent_id") || has("parent")) && !has("spans"):
			return OTel, nil // SDK span objects, as the Python console exporter writes them
		case has("spans") || has("info", "data"):
			return MLflow, nil
		case has("history") || has("trajectory"):
			return Invariant, nil
		case has("messages") || has("role") || has("metadata") || has("function"):
			return Invariant, nil
		case has("step_type"):
			return Snorkel, nil
		case sn.firstValueKeys["data"] && sn.firstValueKeys["type"]:
			return Bedrock, nil
		case sn.firstValueKeys["input"] || sn.firstValueKeys["output"]:
			return unsupported("langfuse-chatml", "this is a Langfuse ChatML parse result (expected output of a converter), not a trace")
		}
	case '[':
		switch {
		case sn.empty:
			return Invariant, nil
		case has("step_type"):
			return Snorkel, nil
		case has("trace") || has("chunk") || has("headers", "payload") || has("returnControl"):
			return Bedrock, nil
		case has("context", "name") && (has("kind") || has("parent_id") || has("parent")):
			return OTel, nil // a list of SDK span objects
		case has("role") || has("content") || has("traj") || has("messages") || has("metadata") || has("function") || sn.nested:
			return Invariant, nil
		}
	}
	if sn.top == 0 {
		return unsupported("", "the input is empty or is not JSON")
	}
	return unsupported("", "no known trace format matches its first keys ("+sn.keyList()+")")
}

// sniffed is what a tolerant look at the first bytes found. Keys are the
// member names of the top-level object, or of the first element of a
// top-level array, plus dotted paths one and two levels down (array elements
// written as "[]"), so that detection survives a truncated head.
type sniffed struct {
	top            byte // '{', '[' or 0
	empty          bool // "[]"
	nested         bool // the first element of the top array is itself an array
	keys           map[string]bool
	firstValueKeys map[string]bool // keys inside the first member's value (or its first element)
	order          []string
}

func (s sniffed) keyList() string {
	if len(s.order) == 0 {
		return "none"
	}
	n := min(len(s.order), 8)
	return strings.Join(s.order[:n], ", ")
}

func sniff(head []byte) sniffed {
	sn := sniffed{keys: map[string]bool{}, firstValueKeys: map[string]bool{}}
	i := 0
	skipWS := func() {
		for i < len(head) && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r' || head[i] == 0xEF || head[i] == 0xBB || head[i] == 0xBF) {
			i++
		}
	}
	skipWS()
	if i >= len(head) || (head[i] != '{' && head[i] != '[') {
		return sn
	}
	sn.top = head[i]
	// Walk tokens, tracking the path of object keys; array elements other
	// than the first are not descended into.
	type frame struct {
		obj   bool
		key   string
		index int
	}
	var stack []frame
	var topKey string // current top-level (relative) member
	firstMember := ""
	base := 1 // depth at which relative keys start
	if sn.top == '[' {
		base = 2
	}
	path := func() (string, int, bool) {
		if len(stack) > base+2 {
			// Deeper than the 3 levels detection reads: building the path
			// of every deep key took time quadratic in the nesting.
			return "", 0, false
		}
		var parts []string
		depth := 0
		for d, f := range stack {
			if d+1 < base {
				if !f.obj && f.index > 0 {
					return "", 0, false
				}
				continue
			}
			if f.obj {
				if d+1 < len(stack) || true {
					parts = append(parts, f.key)
				}
			} else {
				if f.index > 0 {
					return "", 0, false
				}
				parts = append(parts, "[]")
			}
			depth++
		}
		return strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]"), depth, true
	}
	for i < len(head) {
		skipWS()
		if i >= len(head) {
			break
		}
		c := head[i]
		switch c {
		case '{', '[':
			if sn.top == '[' && len(stack) == 1 && stack[0].index == 0 && c == '[' {
				sn.nested = true
			}
			stack = append(stack, frame{obj: c == '{'})
			i++
		case '}', ']':
			if len(stack) == 0 {
				return sn
			}
			if sn.top == '[' && len(stack) == 1 && c == ']' && stack[0].index == 0 && len(sn.order) == 0 && !sn.nested {
				sn.empty = true
			}
			stack = stack[:len(stack)-1]
			i++
		case ',':
			if len(stack) > 0 && !stack[len(stack)-1].obj {
				stack[len(stack)-1].index++
			}
			i++
		case ':':
			i++
		case '"':
			j := i + 1
			for j < len(head) && head[j] != '"' {
				if head[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(head) {
				return sn
			}
			str := string(head[i+1 : j])
			i = j + 1
			skipWS()
			if i < len(head) && head[i] == ':' && len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].key = str
				p, depth, ok := path()
				if ok && depth >= 1 && depth <= 3 {
					if !sn.keys[p] {
						sn.keys[p] = true
						if depth == 1 {
							sn.order = append(sn.order, p)
						}
					}
					if depth == 1 {
						topKey = str
						if firstMember == "" {
							firstMember = str
						}
					}
					if depth >= 2 && topKey == firstMember {
						// keys of the first member's value, or of its first element
						if q := strings.SplitN(p, ".", 2); len(q) == 2 && !strings.Contains(q[1], ".") {
							sn.firstValueKeys[q[1]] = true
						} else if strings.HasPrefix(p, firstMember+"[].") && !strings.Contains(strings.TrimPrefix(p, firstMember+"[]."), ".") {
							sn.firstValueKeys[strings.TrimPrefix(p, firstMember+"[].")] = true
						}
					}
				}
			}
		default:
			i++
		}
	}
	return sn
}
