package snorkel

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

// FuzzDecode: no input makes the decoder panic or loop, every error is a
// placed *decoding.Error, and every trace survives the canonical round trip
// with span ids that hold no '.'.
func FuzzDecode(f *testing.F) {
	seed := readCorpus(f, seedFile)
	f.Add(seed)
	f.Add([]byte(good))
	for _, s := range []string{
		`[]`, `{}`, `[{}]`, `"x"`, `[1, {"step_type": "ROOT_STEP", "value": 1}]`,
		`{"step_type": "ROOT_STEP", "value": "\u2028\ud800", "metadata": {"": 1e999}}`,
		`[{"step_type": "ROOT_STEP", "substeps": [{"step_type": "TOOL", "value": {"a": [1, null]}, "metadata_expand": null}], "substep_execution_type": "parallel"}]`,
		`[{"step_type": "ROOT_STEP", "substeps": [{"step_type": "USER", "value": "a"}, {"step_type": "AI", "substeps": [{"step_type": "API", "value": null}]}]}]`,
		`{"step_type": "ROOT_STEP", "value": 1}` + "\n" + `{"step_type": "ROOT_STEP", "value": 2}`,
		`[{"step_type": "ROOT_STEP", "value": "x", "value": "y"}]`,
		`[{"step_type": "ROOT_STEP", "value": "x"}, {"step_type": "ROOT_STEP", "substeps": [{"step_type": "A", "metadata": {"k": null}, "value": 1}]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), "fuzz")
		for range len(data) + 2 {
			tr, err := dec.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var de *decoding.Error
				if !errors.As(err, &de) {
					t.Fatalf("error %T %v is not a *decoding.Error", err, err)
				}
				if de.File != "fuzz" || de.Line < 1 || de.Col < 1 {
					t.Fatalf("error %q is not placed", de)
				}
				if de.Recoverable && (de.Path == "" || de.Trace < 0) {
					t.Fatalf("recoverable error %q has no JSON path or trace index", de)
				}
				if !de.Recoverable {
					if _, err := dec.Next(); !errors.Is(err, io.EOF) {
						t.Fatalf("Next after a fatal error gave %v", err)
					}
					return
				}
				continue
			}
			if len(tr.Spans) == 0 || tr.Spans[0].Kind != "ROOT_STEP" {
				t.Fatalf("trace without a ROOT_STEP root: %+v", tr.Spans)
			}
			for _, sp := range tr.Spans {
				if sp.ID == "" || strings.Contains(sp.ID, ".") {
					t.Fatalf("span id %q", sp.ID)
				}
			}
			for _, e := range tr.Events {
				if e.SpanID == "" {
					t.Fatalf("event without span id: %+v", e)
				}
			}
			golden.RoundTrip(t, tr)
		}
		t.Fatalf("decoder does not stop")
	})
}

func BenchmarkDecode(b *testing.B) {
	data := readCorpus(b, seedFile)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		dec := NewDecoder(bytes.NewReader(data), "bench")
		n := 0
		for {
			_, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 2 {
			b.Fatalf("%d traces", n)
		}
	}
}

// BenchmarkDecodeLarge decodes one array of 1,000 copies of the seed's
// traces, so the fixed cost of a decoder does not hide the throughput.
func BenchmarkDecodeLarge(b *testing.B) {
	seed := bytes.TrimSpace(readCorpus(b, seedFile))
	inner := seed[1 : len(seed)-1]
	data := []byte{'['}
	for i := range 500 {
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, inner...)
	}
	data = append(data, ']')
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		dec := NewDecoder(bytes.NewReader(data), "bench")
		n := 0
		for {
			_, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 1000 {
			b.Fatalf("%d traces", n)
		}
	}
}
