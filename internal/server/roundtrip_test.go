package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// sdkPush is a body as Invariant's Python SDK sends it
// (push_trace(messages, annotations, dataset, metadata), batched).
const sdkPush = `{
  "messages": [
    [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Get me my inbox"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_inbox", "arguments": {"n": 10}}}]},
      {"role": "tool", "content": "1. Hello from Bob\n2. Meeting at 3", "tool_call_id": "call_1"},
      {"role": "assistant", "content": "You have two messages: ✉️ Bob and a meeting."}
    ],
    [
      {"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "send", "arguments": "not json {"}}], "refusal": null}
    ]
  ],
  "annotations": [
    [{"content": "polite", "address": "messages.4.content:0-8", "extra_metadata": {"score": 0.9, "source": "checker"}},
     {"content": "tool call", "address": "messages.2.tool_calls.0.function.name"}],
    null
  ],
  "dataset": "sdk-roundtrip",
  "metadata": [{"name": "inbox run", "hierarchy_path": ["suite", "inbox"], "model": "gpt-4o", "cost": 0.0012}, null]
}`

// TestInvariantSDKRoundTrip pushes what the Invariant SDK sends, with a
// Bearer key, and gets the same messages, metadata and annotations back
// through get (Invariant and canonical) and export.
func TestInvariantSDKRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("sdk")
		r := f.must(200, "POST", "/api/v1/push/trace", "sdk", sdkPush)
		var out struct {
			ID      []string `json:"id"`
			Dataset string   `json:"dataset"`
		}
		r.json(t, &out)
		if len(out.ID) != 2 || out.Dataset != "sdk-roundtrip" {
			t.Fatalf("push answer %s", r)
		}
		var sent struct {
			Messages    []json.RawMessage   `json:"messages"`
			Annotations [][]json.RawMessage `json:"annotations"`
			Metadata    []json.RawMessage   `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(sdkPush), &sent); err != nil {
			t.Fatal(err)
		}
		type invariantLine struct {
			Messages    json.RawMessage   `json:"messages"`
			Metadata    json.RawMessage   `json:"metadata"`
			Annotations []json.RawMessage `json:"annotations"`
			ID          string            `json:"id"`
			Name        string            `json:"name"`
		}
		check := func(t *testing.T, i int, got invariantLine) {
			t.Helper()
			if !sameJSON(t, got.Messages, sent.Messages[i]) {
				t.Errorf("trace %d messages:\n got %s\nsent %s", i, got.Messages, sent.Messages[i])
			}
			wantMeta := sent.Metadata[i]
			if string(wantMeta) == "null" {
				wantMeta = nil
			}
			if (wantMeta == nil) != (got.Metadata == nil) || wantMeta != nil && !sameJSON(t, got.Metadata, wantMeta) {
				t.Errorf("trace %d metadata: got %s, sent %s", i, got.Metadata, wantMeta)
			}
			if len(got.Annotations) != len(sent.Annotations[i]) {
				t.Fatalf("trace %d: %d annotations, sent %d", i, len(got.Annotations), len(sent.Annotations[i]))
			}
			for j := range got.Annotations {
				if !sameJSON(t, got.Annotations[j], sent.Annotations[i][j]) {
					t.Errorf("trace %d annotation %d:\n got %s\nsent %s", i, j, got.Annotations[j], sent.Annotations[i][j])
				}
			}
			if got.ID != out.ID[i] {
				t.Errorf("trace %d id %q, want %q", i, got.ID, out.ID[i])
			}
		}
		for i, id := range out.ID {
			var got invariantLine
			f.must(200, "GET", "/api/v1/traces/"+id+"?format=invariant", "sdk", "").json(t, &got)
			check(t, i, got)
			if i == 0 && got.Name != "inbox run" {
				t.Errorf("trace name %q, want the metadata's name", got.Name)
			}
			var canon struct {
				Events json.RawMessage `json:"events"`
			}
			f.must(200, "GET", "/api/v1/traces/"+id, "sdk", "").json(t, &canon)
			if !sameJSON(t, canon.Events, sent.Messages[i]) {
				t.Errorf("canonical events differ:\n got %s\nsent %s", canon.Events, sent.Messages[i])
			}
		}
		// Export through the client, as `lookout export` does.
		c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["sdk"]))
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.FindDataset(context.Background(), "sdk-roundtrip")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := c.Export(context.Background(), d.ID, "invariant", &buf); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("export has %d lines:\n%s", len(lines), buf.String())
		}
		for i, line := range lines {
			var got invariantLine
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			check(t, i, got)
		}
	})
}

// corpusFile is one readable corpus file and what the importer made of it:
// the traces it produced and, for the files it rejects traces of (the
// Explorer's negative examples), the errors, as an upload reads them (going
// on after a recoverable error, stopping at another).
type corpusFile struct {
	rel    string
	data   []byte
	meta   json.RawMessage
	traces []*trace.Trace
	errs   []*decoding.Error
}

// readCorpus imports every corpus file formats.Open reads, leaving out only
// the formats it reports unsupported.
func readCorpus(t *testing.T) []corpusFile {
	t.Helper()
	var files []corpusFile
	unsupported, rejected := 0, 0
	corpusDir := testcorpus.Dir(t)
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, path)
		dec, _, err := formats.Open(bytes.NewReader(data), rel, formats.Auto)
		var u *decoding.Unsupported
		if errors.As(err, &u) {
			unsupported++
			return nil
		}
		if err != nil {
			return err
		}
		cf := corpusFile{rel: rel, data: data}
		for {
			tr, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var de *decoding.Error
			if errors.As(err, &de) {
				cf.errs = append(cf.errs, de)
				if de.Recoverable {
					continue
				}
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			cf.traces = append(cf.traces, tr)
		}
		if len(cf.errs) > 0 {
			rejected++
		}
		cf.meta = dec.DatasetMetadata()
		files = append(files, cf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 || unsupported == 0 || rejected == 0 {
		t.Fatalf("corpus: %d readable files, %d unsupported, %d rejected", len(files), unsupported, rejected)
	}
	return files
}

// sameTrace compares a trace read back from the server with the importer's:
// canonical JSON equal, but for the id (the store's own) and the index when
// the file gave none (the store numbers the dataset).
func sameTrace(t *testing.T, what string, got []byte, want *trace.Trace) {
	t.Helper()
	var g trace.Trace
	if err := g.UnmarshalJSON(got); err != nil {
		t.Fatalf("%s: server answer is not a canonical trace: %v", what, err)
	}
	g.ID = want.ID
	if want.Index == nil {
		g.Index = nil
	}
	gb, wb := trace.AppendTrace(nil, &g), trace.AppendTrace(nil, want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s differs from the importer's trace:\n got %.600s\nwant %.600s", what, gb, wb)
	}
}

// TestCorpusRoundTrip pushes the whole shared corpus through the API (as
// canonical traces with the client, and as file uploads) into every backend
// and gets every trace back equal to what the importer produced; the
// Invariant export reads back to the same traces too. A file with traces the
// importer rejects is refused whole in all-or-nothing mode, with the
// importer's errors listed and nothing stored, and in skip-invalid mode
// stores exactly the traces the importer produced.
func TestCorpusRoundTrip(t *testing.T) {
	files := readCorpus(t)
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("corpus")
		ctx := context.Background()
		c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["corpus"]))
		if err != nil {
			t.Fatal(err)
		}
		total, withErrors := 0, 0
		for _, cf := range files {
			total += len(cf.traces)
			if len(cf.errs) > 0 {
				withErrors++
			}
			t.Run(cf.rel, func(t *testing.T) {
				// 1. Pushed as canonical traces in batches.
				p := c.NewPusher(ctx, "push:"+cf.rel, client.PusherOptions{BatchTraces: 64})
				for _, tr := range cf.traces {
					if err := p.Add(trace.AppendTrace(nil, tr)); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				ids := p.IDs()
				if len(ids) != len(cf.traces) {
					t.Fatalf("%d ids for %d traces", len(ids), len(cf.traces))
				}
				for i, id := range ids {
					got, err := c.Trace(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					sameTrace(t, "pushed trace "+id, got, cf.traces[i])
				}

				// 2. Uploaded as the file itself.
				d, err := c.CreateDataset(ctx, "upload:"+cf.rel, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				multipart := len(cf.data)%2 == 0
				if len(cf.errs) > 0 {
					_, err := c.Upload(ctx, d.ID, cf.rel, bytes.NewReader(cf.data), client.UploadOptions{Multipart: multipart})
					var ae *client.Error
					if !errors.As(err, &ae) || ae.Status != 422 {
						t.Fatalf("all-or-nothing upload of a file with invalid traces: %v", err)
					}
					sameErrors(t, client.UploadErrors(err), cf.errs)
					if d, err := c.Dataset(ctx, d.ID); err != nil || d.TraceCount != 0 {
						t.Fatalf("the rejected upload stored %d traces (%v)", d.TraceCount, err)
					}
				}
				res, err := c.Upload(ctx, d.ID, cf.rel, bytes.NewReader(cf.data), client.UploadOptions{Multipart: multipart, SkipInvalid: len(cf.errs) > 0})
				if err != nil {
					t.Fatal(err)
				}
				if res.Stored != len(cf.traces) || len(res.IDs) != len(cf.traces) {
					t.Fatalf("upload stored %d of %d, skipped %v", res.Stored, len(cf.traces), res.Skipped)
				}
				sameErrors(t, res.Skipped, cf.errs)
				for i, id := range res.IDs {
					got, err := c.Trace(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					sameTrace(t, "uploaded trace "+id, got, cf.traces[i])
				}

				// 3. The Invariant export of the upload reads back the same.
				var buf bytes.Buffer
				if _, err := c.Export(ctx, d.ID, "invariant", &buf); err != nil {
					t.Fatal(err)
				}
				dec, _, err := formats.Open(&buf, "export.jsonl", formats.Invariant)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; ; i++ {
					tr, err := dec.Next()
					if errors.Is(err, io.EOF) {
						if i != len(cf.traces) {
							t.Errorf("export has %d traces, want %d", i, len(cf.traces))
						}
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if i >= len(cf.traces) {
						t.Fatalf("export has more than %d traces", len(cf.traces))
					}
					sameTrace(t, "exported trace", trace.AppendTrace(nil, tr), cf.traces[i])
				}
				if cf.meta != nil && !sameJSON(t, dec.DatasetMetadata(), cf.meta) {
					t.Errorf("exported dataset metadata %s, want %s", dec.DatasetMetadata(), cf.meta)
				}
			})
		}
		t.Logf("%d files (%d of them with traces the importer rejects), %d traces round-tripped", len(files), withErrors, total)
	})
}

// sameErrors checks the errors an upload reported against the importer's.
func sameErrors(t *testing.T, got []client.UploadError, want []*decoding.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the upload reported %d errors, the importer %d:\n got %+v\nwant %v", len(got), len(want), got, want)
	}
	for i, w := range want {
		g := got[i]
		// A multipart upload names the file by its base name only.
		wantText := strings.Replace(w.Error(), w.File, g.File, 1)
		if g.File != w.File && g.File != filepath.Base(w.File) || g.Line != w.Line || g.Col != w.Col || g.Path != w.Path || g.Message != w.Msg || g.Text != wantText {
			t.Errorf("error %d: the upload reported %+v, the importer %q", i, g, w.Error())
		}
		if w.Line == 0 && w.Path == "" {
			t.Errorf("error %d names no place: %q", i, w.Error())
		}
	}
}

// TestCanonicalExport checks the canonical export lines.
func TestCanonicalExport(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("x")
		ids := f.push("x", `{"dataset": "d", "messages": [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]}`)
		var d []struct{ ID string }
		var list struct {
			Datasets []struct{ ID string }
		}
		f.must(200, "GET", "/api/v1/datasets?name=d", "x", "").json(t, &list)
		d = list.Datasets
		f.must(200, "PUT", "/api/v1/datasets/"+d[0].ID+"/metadata", "x", `{"k": "v"}`)
		r := f.must(200, "GET", "/api/v1/datasets/"+d[0].ID+"/export?format=canonical", "x", "")
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) != 3 || lines[0] != `{"metadata":{"k":"v"}}` || !strings.HasPrefix(lines[1], `{"id":"`+ids[0]+`","index":`) {
			t.Fatalf("canonical export:\n%s", r)
		}
		if cd := r.header.Get("Content-Disposition"); !strings.Contains(cd, `filename="d.jsonl"`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		f.must(400, "GET", "/api/v1/datasets/"+d[0].ID+"/export?format=csv", "x", "")
		f.must(404, "GET", "/api/v1/datasets/"+d[0].ID+"/export", "", "")
	})
}

// TestPusherSplitsTooLargeBatches: a batch over the server's body limit is
// sent in halves, in order, and a single trace over it is an error.
func TestPusherSplitsTooLargeBatches(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: 16 << 10})
		f.addUser("p")
		ctx := context.Background()
		c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["p"]))
		if err != nil {
			t.Fatal(err)
		}
		batches := 0
		p := c.NewPusher(ctx, "split", client.PusherOptions{BatchTraces: 40, OnBatch: func(int, int64) { batches++ }})
		for i := range 100 {
			tr := fmt.Sprintf(`{"metadata":{"i":%d},"events":[{"role":"user","content":%q}]}`, i, strings.Repeat("z", 1000))
			if err := p.Add(json.RawMessage(tr)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		ids := p.IDs()
		if len(ids) != 100 || batches < 8 {
			t.Fatalf("%d ids in %d batches", len(ids), batches)
		}
		for i, id := range ids {
			got, err := c.Trace(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), fmt.Sprintf(`"index":%d,"metadata":{"i":%d}`, i, i)) {
				t.Fatalf("trace %d out of order: %.100s", i, got)
			}
		}
		p = c.NewPusher(ctx, "split", client.PusherOptions{})
		p.Add(json.RawMessage(`{"events":[{"role":"user","content":"` + strings.Repeat("z", 20<<10) + `"}]}`))
		var ae *client.Error
		if err := p.Close(); !errors.As(err, &ae) || ae.Status != 413 {
			t.Fatalf("a single trace over the limit: %v", err)
		}
	})
}
