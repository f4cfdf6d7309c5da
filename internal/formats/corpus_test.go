package formats

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// manifestRow is one file of shared/corpus/MANIFEST.md.
type manifestRow struct {
	path, format, role string
	traces             int
	units              string // the events/spans column
}

// readManifest lists every file the manifest names, so that a file added to
// the corpus is tested without touching this test.
func readManifest(t testing.TB) []manifestRow {
	t.Helper()
	data, err := os.ReadFile(testcorpus.File(t, "MANIFEST.md"))
	if err != nil {
		t.Fatalf("the shared corpus must sit beside the repository: %v", err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([a-z-]+) \\| (.*?) \\| (\\d+) \\| ([^|]*) \\|")
	var rows []manifestRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[4])
		rows = append(rows, manifestRow{path: m[1], format: m[2], role: m[3], traces: n, units: strings.TrimSpace(m[5])})
	}
	if len(rows) < 80 {
		t.Fatalf("MANIFEST.md lists %d files; expected the 84 of the corpus (table format changed?)", len(rows))
	}
	return rows
}

// expectedFormat maps the manifest's format names to Lookout's.
var expectedFormat = map[string]Format{
	"openai-events":        Invariant,
	"openai-events-jsonl":  Invariant,
	"swe-agent-traj":       Invariant,
	"snorkel-steps":        Snorkel,
	"mlflow-trace":         MLflow,
	"bedrock-agent-events": Bedrock,
	"otel-spans":           OTel,
	"otel-langfuse-export": OTel,
}

// decodeAll reads every trace of data, collecting errors.
func decodeAll(t testing.TB, data []byte, name string, f Format) (traces []*trace.Trace, meta []byte, got Format, errs []error) {
	t.Helper()
	dec, got, err := Open(bytes.NewReader(data), name, f)
	if err != nil {
		return nil, nil, "", []error{err}
	}
	for {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, err)
			var de *decoding.Error
			if errors.As(err, &de) && de.Recoverable {
				continue
			}
			break
		}
		traces = append(traces, tr)
	}
	return traces, dec.DatasetMetadata(), got, errs
}

// TestCorpus holds the Done-when of the foundation: every corpus file in a
// readable format validates (or is rejected as the manifest says), files that
// are not traces (Langfuse's expected ChatML outputs) are reported as
// unsupported by name, and converting to Invariant JSONL and back loses
// nothing. OpenTelemetry files also have the manifest's span count.
func TestCorpus(t *testing.T) {
	for _, row := range readManifest(t) {
		t.Run(row.path, func(t *testing.T) {
			data, err := os.ReadFile(testcorpus.File(t, row.path))
			if err != nil {
				t.Fatal(err)
			}
			traces, meta, got, errs := decodeAll(t, data, row.path, Auto)
			if strings.Contains(row.role, "expected output") {
				var u *decoding.Unsupported
				if len(errs) != 1 || !errors.As(errs[0], &u) || u.Format != "langfuse-chatml" {
					t.Fatalf("want an unsupported-format error naming langfuse-chatml, got %v", errs)
				}
				if !strings.Contains(errs[0].Error(), row.path) {
					t.Errorf("error %q does not name the file", errs[0])
				}
				return
			}
			want, ok := expectedFormat[row.format]
			if !ok {
				t.Fatalf("manifest format %q has no expected Lookout format", row.format)
			}
			if got != want {
				t.Fatalf("detected %q, want %q", got, want)
			}
			if strings.Contains(row.role, "invalid → rejected") {
				if len(errs) == 0 {
					t.Fatalf("a file the manifest says is rejected decoded without error")
				}
				var de *decoding.Error
				if !errors.As(errs[0], &de) || de.Line == 0 || de.File != row.path {
					t.Fatalf("rejection %v does not carry file and line", errs[0])
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("valid file rejected: %v", errs)
			}
			if len(traces) != row.traces {
				t.Fatalf("%d traces, manifest says %d", len(traces), row.traces)
			}
			if want == OTel {
				spans := 0
				for _, tr := range traces {
					spans += len(tr.Spans)
				}
				if n, err := strconv.Atoi(row.units); err != nil || spans != n {
					t.Fatalf("%d spans, manifest says %q", spans, row.units)
				}
			}
			roundTrip(t, traces, meta)
		})
	}
}

// roundTrip converts traces to Invariant JSONL and back, and also through
// canonical JSON, requiring identical canonical bytes.
func roundTrip(t *testing.T, traces []*trace.Trace, meta []byte) {
	t.Helper()
	var buf bytes.Buffer
	enc := invariant.NewEncoder(&buf)
	if meta != nil {
		if err := enc.WriteDatasetMetadata(meta); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range traces {
		if err := enc.Encode(tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	back, meta2, got, errs := decodeAll(t, buf.Bytes(), "converted.jsonl", Auto)
	if len(errs) > 0 {
		t.Fatalf("converted output does not decode: %v", errs)
	}
	if got != Invariant {
		t.Fatalf("converted output detected as %q", got)
	}
	if !bytes.Equal(meta, meta2) {
		t.Errorf("dataset metadata changed:\n  %s\n  %s", meta, meta2)
	}
	if len(back) != len(traces) {
		t.Fatalf("%d traces after conversion, %d before", len(back), len(traces))
	}
	for i := range traces {
		a := trace.AppendTrace(nil, traces[i])
		b := trace.AppendTrace(nil, back[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("trace %d changed in the Invariant round trip:\n before %s\n after  %s", i, clip(a), clip(b))
		}
		var c trace.Trace
		if err := c.UnmarshalJSON(a); err != nil {
			t.Fatalf("trace %d: canonical JSON does not read back: %v", i, err)
		}
		if d := trace.AppendTrace(nil, &c); !bytes.Equal(a, d) {
			t.Fatalf("trace %d changed in the canonical round trip:\n before %s\n after  %s", i, clip(a), clip(d))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// TestExamplesMatchSeeds keeps examples/ an exact copy of the corpus seeds.
func TestExamplesMatchSeeds(t *testing.T) {
	seeds, err := filepath.Glob(filepath.Join(testcorpus.Dir(t), "seeds", "*"))
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds found: %v", err)
	}
	for _, s := range seeds {
		want, _ := os.ReadFile(s)
		got, err := os.ReadFile(filepath.Join("../../examples", filepath.Base(s)))
		if err != nil {
			t.Errorf("examples/ lacks %s: %v", filepath.Base(s), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples/%s differs from the seed", filepath.Base(s))
		}
	}
}

// FuzzDetect feeds arbitrary input through detection and whichever decoder
// it picks: nothing may panic, and what decodes must round-trip.
func FuzzDetect(f *testing.F) {
	for _, row := range readManifest(f) {
		data, err := os.ReadFile(testcorpus.File(f, row.path))
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 64<<10 {
			data = data[:64<<10]
		}
		f.Add(data)
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"spans": []}`))
	f.Add([]byte(`[{"step_type": "ROOT_STEP"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		traces, _, _, _ := decodeAll(t, data, "fuzz", Auto)
		for _, tr := range traces {
			a := trace.AppendTrace(nil, tr)
			var c trace.Trace
			if err := c.UnmarshalJSON(a); err != nil {
				t.Fatalf("canonical JSON does not read back: %v\n%s", err, a)
			}
			if b := trace.AppendTrace(nil, &c); !bytes.Equal(a, b) {
				t.Fatalf("canonical round trip changed the trace:\n%s\n%s", a, b)
			}
		}
	})
}
