// Package corpusdata builds benchmark inputs from the shared corpus.
package corpusdata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TauBench is the corpus file most like real agent traces (200 traces).
const TauBench = "openai/tau-bench/gpt-4o-airline.json"

// Traces decodes one corpus file.
func Traces(corpusDir, rel string) ([]*trace.Trace, error) {
	data, err := os.ReadFile(filepath.Join(corpusDir, rel))
	if err != nil {
		return nil, err
	}
	dec, _, err := formats.Open(bytes.NewReader(data), rel, formats.Auto)
	if err != nil {
		return nil, err
	}
	var out []*trace.Trace
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}

// JSONL returns Invariant JSONL of the tau-bench traces repeated until it is
// at least size bytes.
func JSONL(corpusDir string, size int64) ([]byte, int, error) {
	var buf bytes.Buffer
	n, err := writeJSONL(&buf, corpusDir, size)
	return buf.Bytes(), n, err
}

// WriteJSONL writes such a file to path and reports its size and trace count.
func WriteJSONL(path, corpusDir string, size int64) (int64, int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	cw := &countingWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	n, err := writeJSONL(bw, corpusDir, size)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return cw.n, n, err
}

func writeJSONL(w io.Writer, corpusDir string, size int64) (int, error) {
	traces, err := Traces(corpusDir, TauBench)
	if err != nil {
		return 0, err
	}
	if len(traces) == 0 {
		return 0, fmt.Errorf("%s has no traces", TauBench)
	}
	cw := &countingWriter{w: w}
	enc := invariant.NewEncoder(cw)
	n := 0
	for cw.n < size {
		for _, t := range traces {
			if err := enc.Encode(t); err != nil {
				return n, err
			}
			n++
		}
		if err := enc.Flush(); err != nil {
			return n, err
		}
	}
	return n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// All decodes every corpus file an importer reads whole, one slice of
// traces per file in path order; files no importer reads, or that it
// rejects, are left out.
func All(corpusDir string) ([][]*trace.Trace, error) {
	var out [][]*trace.Trace
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == ".md" {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, p)
		ts, err := Traces(corpusDir, rel)
		if err == nil && len(ts) > 0 {
			out = append(out, ts)
		}
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no traces in %s", corpusDir)
	}
	return out, err
}
