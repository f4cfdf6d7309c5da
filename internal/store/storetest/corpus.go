package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// CorpusFile is one file of the shared corpus with the traces the importers
// read from it (traces they reject are left out).
type CorpusFile struct {
	Path   string // relative to the corpus directory
	Traces []*trace.Trace
}

var corpus struct {
	once  sync.Once
	dir   string
	files []CorpusFile
	err   error
}

// Corpus decodes every file of the shared corpus the importers read, once
// per process. The traces are shared: copy one before changing it.
func Corpus(tb testing.TB) []CorpusFile {
	tb.Helper()
	corpus.once.Do(func() {
		corpus.dir, corpus.err = testcorpus.Find("corpus")
		if corpus.err != nil {
			return
		}
		corpus.err = filepath.WalkDir(corpus.dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(corpus.dir, p)
			dec, _, err := formats.Open(bytes.NewReader(data), rel, formats.Auto)
			if err != nil {
				var u *decoding.Unsupported
				if errors.As(err, &u) {
					return nil // a format no importer reads yet
				}
				return err
			}
			f := CorpusFile{Path: filepath.ToSlash(rel)}
			for {
				tr, err := dec.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var de *decoding.Error
					if errors.As(err, &de) && de.Recoverable {
						continue
					}
					break // the file is rejected from here on, as MANIFEST.md says
				}
				f.Traces = append(f.Traces, tr)
			}
			if len(f.Traces) > 0 {
				corpus.files = append(corpus.files, f)
			}
			return nil
		})
		sort.Slice(corpus.files, func(i, j int) bool { return corpus.files[i].Path < corpus.files[j].Path })
	})
	if corpus.err != nil {
		tb.Fatalf("reading the shared corpus: %v", corpus.err)
	}
	n := 0
	for _, f := range corpus.files {
		n += len(f.Traces)
	}
	if n < 240 {
		tb.Fatalf("the shared corpus gave %d traces; expected at least 240 (the importers or the corpus changed?)", n)
	}
	return corpus.files
}

// TauBench returns the 200 traces of the tau-bench file of the corpus.
func TauBench(tb testing.TB) []*trace.Trace {
	tb.Helper()
	for _, f := range Corpus(tb) {
		if f.Path == "openai/tau-bench/gpt-4o-airline.json" {
			if len(f.Traces) != 200 {
				tb.Fatalf("tau-bench gave %d traces, want 200", len(f.Traces))
			}
			return f.Traces
		}
	}
	tb.Fatal("no tau-bench file in the corpus")
	return nil
}

// NewTraceOf makes a store.NewTrace of a decoded trace, the way the server
// does: a copy of the trace with its annotations moved out (source "user",
// the other members kept as the Extra object).
func NewTraceOf(t *trace.Trace, author string) store.NewTrace {
	c := *t
	c.Annotations = nil
	nt := store.NewTrace{Trace: &c}
	for _, a := range t.Annotations {
		sa := store.Annotation{Address: a.Address, Content: a.Content, Source: "user", Author: author}
		if len(a.Extra) > 0 {
			b := []byte{'{'}
			for i, f := range a.Extra {
				if i > 0 {
					b = append(b, ',')
				}
				b = trace.AppendString(b, f.Key)
				b = append(b, ':')
				b = append(b, f.Value...)
			}
			sa.Extra = json.RawMessage(append(b, '}'))
		}
		nt.Annotations = append(nt.Annotations, sa)
	}
	return nt
}

// canonical is the canonical JSON of a trace.
func canonical(t *trace.Trace) string { return string(trace.AppendTrace(nil, t)) }
