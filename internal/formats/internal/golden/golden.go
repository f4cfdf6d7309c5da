// Package golden checks what a decoder makes of a corpus file against a
// golden file kept under the package's testdata, for the tests of the
// format packages. `go test ./internal/formats/... -update` rewrites the
// golden files from the decoders' output; review the diff before
// committing it.
package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Every test binary under internal/formats registers -update through this
// package (those without golden files import it blank), so that one
// `go test ./internal/formats/... -update` works.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden from the decoders' output")

// Output is the canonical output of a decoder over one input, as the
// golden files hold it: the dataset metadata when there is one, then one
// entry per result of Next (a trace in canonical JSON, or an error's text),
// each an indented JSON object, so that a change shows as a readable diff.
func Output(dec decoding.Decoder) []byte {
	var out bytes.Buffer
	var entries [][]byte
	for {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			entries = append(entries, b)
			var de *decoding.Error
			if errors.As(err, &de) && de.Recoverable {
				continue
			}
			break
		}
		entries = append(entries, append(append([]byte(`{"trace":`), trace.AppendTrace(nil, tr)...), '}'))
	}
	if meta := dec.DatasetMetadata(); meta != nil {
		entries = append([][]byte{append(append([]byte(`{"dataset_metadata":`), meta...), '}')}, entries...)
	}
	for _, e := range entries {
		if err := json.Indent(&out, e, "", " "); err != nil {
			// Canonical JSON is valid JSON; keep the bytes as they are
			// should that ever break, so that the diff shows it.
			out.Write(e)
		}
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// Test checks the output of newDecoder over each named corpus file, which
// read returns, in a subtest named after the file.
func Test(t *testing.T, names []string, read func(t testing.TB, name string) []byte, newDecoder func(r io.Reader, file string) decoding.Decoder) {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("no corpus files")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			Check(t, name, Output(newDecoder(bytes.NewReader(read(t, name)), name)))
		})
	}
}

// Check compares got with testdata/golden/<name>.golden, or rewrites that
// file under -update. name is the corpus file's path relative to the corpus.
func Check(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", filepath.FromSlash(name)+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file (run go test with -update to write it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff if the change is meant):\n%s", path, firstDiff(want, got))
	}
}

// firstDiff shows the first line that differs, with its line number.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want " + clip(w) + "\n  got  " + clip(g)
		}
	}
	return "(same lines, different bytes)"
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
