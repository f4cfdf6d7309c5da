package golden

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// RoundTrip checks that a decoded trace's canonical JSON reads back as the
// same trace: AppendTrace, UnmarshalJSON, AppendTrace give the same bytes.
func RoundTrip(t testing.TB, tr *trace.Trace) {
	t.Helper()
	a := trace.AppendTrace(nil, tr)
	var back trace.Trace
	if err := back.UnmarshalJSON(a); err != nil {
		t.Fatalf("canonical JSON does not read back: %v\n%s", err, a)
	}
	if b := trace.AppendTrace(nil, &back); !bytes.Equal(a, b) {
		t.Fatalf("canonical round trip changed the trace:\n%s\n%s", a, b)
	}
}

// SpanTree checks what a decoder of span trees promises: span ids unique,
// not empty and without "." (addresses use it), every span after its
// parent, every event on one of the trace's spans.
func SpanTree(t testing.TB, tr *trace.Trace) {
	t.Helper()
	seen := map[string]bool{}
	for _, sp := range tr.Spans {
		if sp.ID == "" || strings.Contains(sp.ID, ".") || seen[sp.ID] {
			t.Fatalf("span id %q", sp.ID)
		}
		seen[sp.ID] = true
	}
	before := map[string]bool{}
	for _, sp := range tr.Spans {
		if sp.ParentID != "" && seen[sp.ParentID] && !before[sp.ParentID] {
			t.Fatalf("span %q comes before its parent %q", sp.ID, sp.ParentID)
		}
		before[sp.ID] = true
	}
	for _, e := range tr.Events {
		if !seen[e.SpanID] {
			t.Fatalf("event span id %q is not a span", e.SpanID)
		}
	}
}

// DecodingError is err as the *decoding.Error every decoder error must be.
func DecodingError(t testing.TB, err error) *decoding.Error {
	t.Helper()
	var de *decoding.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %T %v is not a *decoding.Error", err, err)
	}
	return de
}

// Drain reads a decoder given fuzz input (named "fuzz") to its end, as the
// fuzz targets do: every error a placed *decoding.Error (with a message
// when msg, a trace index when it is recoverable and indexed), nothing
// after a fatal one, each trace given to check, and an end within limit
// reads.
func Drain(t testing.TB, next func() (*trace.Trace, error), limit int, msg, indexed bool, check func(*trace.Trace)) {
	t.Helper()
	for range limit {
		tr, err := next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err == nil {
			check(tr)
			continue
		}
		de := DecodingError(t, err)
		if de.File != "fuzz" || de.Line < 1 || de.Col < 1 || (msg && de.Msg == "") {
			t.Fatalf("error %q is not placed", de)
		}
		if de.Recoverable && (de.Path == "" || (indexed && de.Trace < 0)) {
			t.Fatalf("recoverable error %q has no JSON path or trace index", de)
		}
		if !de.Recoverable {
			if _, err := next(); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after a fatal error gave %v", err)
			}
			return
		}
	}
	t.Fatalf("the decoder does not stop")
}
