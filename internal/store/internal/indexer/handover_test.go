package indexer_test

import (
	"reflect"
	"testing"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/store/storetest"
	"github.com/lookout-dev/lookout/internal/trace"
)

// A trace handed over indexes exactly as its stored row decodes, for every
// corpus trace: the handover spares the decoding, not a document.
func TestHandoverIndexesAsStored(t *testing.T) {
	h := indexer.NewHandover(1<<20, 1<<30)
	n := 0
	for _, f := range storetest.Corpus(t) {
		for i, tr := range f.Traces {
			nt := storetest.NewTraceOf(tr, "")
			rows, err := storeutil.PrepareTraces([]store.NewTrace{nt}, storeutil.Now())
			if err != nil {
				t.Fatalf("%s trace %d: %v", f.Path, i, err)
			}
			r := rows[0]
			h.Put(r.ID, "", r.Content, r.Metadata, nt.Trace)
			stored, err := storeutil.DecodeContent(r.Content, r.Encoding, r.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			handed := h.Take(r.ID, "", r.Content, r.Metadata)
			if handed == nil {
				t.Fatalf("%s trace %d: not handed back", f.Path, i)
			}
			if got, want := search.Index(handed), search.Index(stored); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s trace %d: handed over, it indexes as\n%+v\nstored, as\n%+v", f.Path, i, got, want)
			}
			n++
		}
	}
	if n < 200 {
		t.Fatalf("only %d corpus traces", n)
	}
}

// Only the bytes it was stored with give a trace back, once; a full
// handover keeps the traces it has.
func TestHandoverTake(t *testing.T) {
	h := indexer.NewHandover(2, 100)
	a, b := &trace.Trace{Name: "a"}, &trace.Trace{Name: "b"}
	h.Put("a", "", []byte("content a"), []byte(`{"k":1}`), a)
	if got := h.Take("a", "", []byte("content a"), []byte(`{"k":2}`)); got != nil {
		t.Error("other metadata: handed back")
	}
	if got := h.Take("a", "", []byte("content a"), []byte(`{"k":1}`)); got != nil {
		t.Error("taken twice")
	}
	h.Put("a", "", []byte("content a"), nil, a)
	if got := h.Take("a", "", []byte("content b"), nil); got != nil {
		t.Error("other content: handed back")
	}
	h.Put("a", "", []byte("content a"), nil, a)
	h.Put("b", "", []byte("content b"), nil, b)
	h.Put("c", "", []byte("content c"), nil, b) // full: not kept
	if got := h.Take("c", "", []byte("content c"), nil); got != nil {
		t.Error("kept past its bound")
	}
	if got := h.Take("a", "", []byte("content a"), nil); got == nil || got.Name != "a" || got == a {
		t.Errorf("a: got %+v (a copy of a wanted)", got)
	}
}

// Handed over in a named row version, a trace is given back for that
// version alone, whatever bytes come with it (the content is not read), and
// Versions names it until it is taken.
func TestHandoverVersion(t *testing.T) {
	h := indexer.NewHandover(4, 100)
	a := &trace.Trace{Name: "a"}
	h.Put("a", "41", []byte("content a"), nil, a)
	h.Put("b", "", []byte("content b"), nil, a)
	if got, want := h.Versions([]string{"a", "b", "c"}), []string{"41", "", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("versions: got %q, want %q", got, want)
	}
	if got := h.Take("a", "42", nil, nil); got != nil {
		t.Error("another version: handed back")
	}
	if got := h.Versions([]string{"a"}); got[0] != "" {
		t.Errorf("taken, still named %q", got[0])
	}
	h.Put("a", "41", []byte("content a"), nil, a)
	if got := h.Take("a", "41", nil, nil); got == nil || got.Name != "a" {
		t.Errorf("its version: got %+v", got)
	}
	h.Put("a", "41", []byte("content a"), nil, a)
	if got := h.Take("a", "", []byte("content a"), nil); got != nil {
		t.Error("handed over in a version, given back for its bytes alone")
	}
	// A version keeps no content, but counts its size: 100 bytes in all.
	h.Put("a", "41", make([]byte, 60), nil, a)
	h.Put("c", "43", make([]byte, 60), nil, a)
	if got := h.Take("c", "43", nil, nil); got != nil {
		t.Error("kept past its size bound")
	}
}
