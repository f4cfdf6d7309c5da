package search_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// IndexTexts is Index without addresses: on every corpus trace the
// formats read, the same pieces (texts and offsets, in order), facets and
// metadata. IndexHashed is IndexTexts with HashPieces' hashes, with one
// cache for every trace (the corpus repeats texts across traces).
func TestIndexTextsIsIndexWithoutAddresses(t *testing.T) {
	traces := 0
	cache := search.TextCache{}
	filepath.WalkDir(testcorpus.Dir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		dec, _, err := formats.Open(f, path, formats.Auto)
		if err != nil {
			return nil // not a trace file the formats read
		}
		for {
			tr, err := dec.Next()
			if errors.Is(err, io.EOF) || err != nil {
				return nil
			}
			traces++
			want, got := search.Index(tr), search.IndexTexts(tr)
			for i := range want.Pieces {
				want.Pieces[i].Address = ""
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, trace %d: IndexTexts differs from Index without addresses", path, traces)
			}
			hashed := search.IndexHashed(tr, cache)
			if got.HashPieces(); len(got.Pieces) == 0 {
				got.Hashes = []search.TextHash{}
			}
			if !reflect.DeepEqual(hashed, got) {
				t.Fatalf("%s, trace %d: IndexHashed differs from IndexTexts and HashPieces", path, traces)
			}
		}
	})
	if traces < 200 {
		t.Fatalf("only %d corpus traces read", traces)
	}
	if len(cache) == 0 {
		t.Fatal("IndexHashed cached no text")
	}
}
