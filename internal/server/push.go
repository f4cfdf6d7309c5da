package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// push is POST /api/v1/push/trace, Invariant's push API unchanged:
//
//	{"messages": [[event...]...], "annotations"?: [[{content, address, extra_metadata?}]...],
//	 "dataset"?: name, "metadata"?: [{...}...]}  →  {"id": [uuid...], "dataset"?: name}
//
// annotations and metadata, when given, have one entry (or null) per trace.
// A trace's name is its metadata's "name" and its place in the hierarchy its
// "hierarchy_path", as in Invariant's Explorer; the metadata is kept as sent.
// The dataset is created (private) on first push. Without a dataset the
// traces are kept outside any dataset, visible to the pusher only.
//
// Lookout's own client sends "traces": [canonical trace...] instead of
// "messages", which keeps what the Invariant shape cannot carry (spans,
// names, indexes, unknown members). Either way the batch is stored in one
// transaction before the answer: all of it or, on any error, none.
//
// "on_conflict" says what becomes of a trace whose "index" the dataset
// already holds (or an earlier trace of the push gives): "fail" (the
// default) refuses the push with 409 naming the trace and the index;
// "skip" stores the others and lists it in "skipped" (its id is null);
// "append" stores it with an index after the last one and lists it in
// "reindexed".
func (s *Server) push(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	if err := s.monitor.admit(); err != nil {
		return err
	}
	req, err := decodePush(r)
	if err != nil {
		return err
	}
	batch, err := req.newTraces(p.User.Name)
	if err != nil {
		return err
	}
	// The traces hold copies of all they need: let the body go while they
	// are encoded and stored (a large push's peak memory falls by its size).
	req.body = nil
	var datasetID string
	if req.hasDataset {
		if err := validName("dataset name", req.dataset); err != nil {
			return err
		}
		d, err := s.datasetForPush(r.Context(), p, req.dataset)
		if err != nil {
			return err
		}
		datasetID = d.ID
	}
	// The traces are the request's: handed over, the index need not decode them.
	res, err := s.st.AddTracesWith(r.Context(), p.User.ID, datasetID, batch, store.AddOptions{OnConflict: req.onConflict, HandOver: true})
	var taken *store.IndexTakenError
	if errors.As(err, &taken) {
		return req.indexTaken(taken)
	}
	if err != nil {
		return err
	}
	resp := pushResponse{Dataset: req.dataset, ID: make([]*string, len(res.IDs))}
	for i := range res.IDs {
		if res.IDs[i] != "" {
			resp.ID[i] = &res.IDs[i]
		}
	}
	for _, c := range res.Conflicts {
		if c.NewIndex < 0 {
			resp.Skipped = append(resp.Skipped, indexConflictJSON{Trace: c.Trace, Index: c.Index})
		} else {
			resp.Reindexed = append(resp.Reindexed, indexConflictJSON{Trace: c.Trace, Index: c.Index, NewIndex: &c.NewIndex})
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// pushResponse is the answer to a push: the ids in order (null for a
// trace skipped as its index was taken), and the traces whose index was.
type pushResponse struct {
	ID        []*string           `json:"id"`
	Dataset   string              `json:"dataset,omitempty"`
	Skipped   []indexConflictJSON `json:"skipped,omitempty"`
	Reindexed []indexConflictJSON `json:"reindexed,omitempty"`
}

// indexConflictJSON is a trace of a push whose index was taken.
type indexConflictJSON struct {
	Trace    int    `json:"trace"` // its place in the push, from 0
	Index    int64  `json:"index"`
	NewIndex *int64 `json:"new_index,omitempty"`
}

// conflictModes are the values of on_conflict.
var conflictModes = map[string]store.OnConflict{"fail": store.ConflictFail, "skip": store.ConflictSkip, "append": store.ConflictAppend}

// indexTaken is the 409 of a push refused for a trace whose index is taken:
// it names the trace by its place in the body and the index.
func (req *pushRequest) indexTaken(e *store.IndexTakenError) error {
	path := fmt.Sprintf("$.traces[%d]", e.Trace)
	if req.hasMessages {
		path = fmt.Sprintf("$.messages[%d]", e.Trace)
	}
	held := fmt.Sprintf("dataset %q already holds it", req.dataset)
	if e.InBatch >= 0 {
		held = fmt.Sprintf("trace %d of this push gives it too", e.InBatch)
	}
	return &apiError{Status: http.StatusConflict, Code: codeConflict,
		Message: fmt.Sprintf(`trace %d of this push (%s) has index %d, which %s; nothing was stored (send "on_conflict": "skip" or "append" to store the others)`, e.Trace, path, e.Index, held),
		Details: map[string]any{"trace": e.Trace, "index": e.Index, "path": path + ".index"}}
}

// pushRequest is the body of a push, decoded.
type pushRequest struct {
	body        []byte
	messages    [][]trace.Event // the Invariant shape
	traces      []*trace.Trace  // Lookout's canonical traces
	annotations [][]trace.Annotation
	metadata    []json.RawMessage
	dataset     string
	onConflict  store.OnConflict
	hasMessages bool
	hasTraces   bool
	hasAnns     bool
	hasMeta     bool
	hasDataset  bool
}

// decodePush reads a push body; its members are checked by newTraces.
func decodePush(r *http.Request) (pushRequest, error) {
	var req pushRequest
	body, err := decodeBody(r, map[string]member{
		"messages": func(s *jsonscan.Scanner) error {
			req.hasMessages = true
			if err := s.Expect(jsonscan.Array, "messages (a list of traces, each a list of events)"); err != nil {
				return err
			}
			req.messages = [][]trace.Event{}
			return s.Array(func(int) error {
				evs, err := trace.DecodeEvents(s, "a trace (a list of events)")
				req.messages = append(req.messages, evs)
				return err
			})
		},
		"traces": func(s *jsonscan.Scanner) error {
			req.hasTraces = true
			if err := s.Expect(jsonscan.Array, "traces (a list of canonical traces)"); err != nil {
				return err
			}
			req.traces = []*trace.Trace{}
			return s.Array(func(int) error {
				t := new(trace.Trace)
				req.traces = append(req.traces, t)
				return trace.DecodeTrace(s, t)
			})
		},
		"annotations": func(s *jsonscan.Scanner) error {
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			req.hasAnns = true
			if err := s.Expect(jsonscan.Array, "annotations (one list of annotations, or null, per trace)"); err != nil {
				return err
			}
			req.annotations = [][]trace.Annotation{}
			return s.Array(func(int) error {
				if s.Peek() == jsonscan.Null {
					req.annotations = append(req.annotations, nil)
					return s.Null()
				}
				as, err := trace.DecodeAnnotations(s)
				req.annotations = append(req.annotations, as)
				return err
			})
		},
		"metadata": func(s *jsonscan.Scanner) error {
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			req.hasMeta = true
			if err := s.Expect(jsonscan.Array, "metadata (one object, or null, per trace)"); err != nil {
				return err
			}
			req.metadata = []json.RawMessage{}
			return s.Array(func(int) error {
				m, err := trace.DecodeObject(s, "metadata of a trace")
				req.metadata = append(req.metadata, m)
				return err
			})
		},
		"dataset": optStr(&req.dataset, &req.hasDataset, "dataset (a name)"),
		"on_conflict": func(s *jsonscan.Scanner) error {
			at := s.Offset()
			v, err := s.String("on_conflict")
			if err != nil {
				return err
			}
			m, ok := conflictModes[v]
			if !ok {
				return s.ErrorAt(at, `on_conflict must be "fail", "skip" or "append", not %q`, v)
			}
			req.onConflict = m
			return nil
		},
	})
	req.body = body
	return req, err
}

// newTraces checks a push's members against each other and makes the
// traces to store; author is the author of their annotations.
func (req *pushRequest) newTraces(author string) ([]store.NewTrace, error) {
	invalid := func(format string, args ...any) error {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, format, args...)
	}
	switch {
	case req.hasMessages && req.hasTraces:
		return nil, invalid(`send either "messages" (the Invariant shape) or "traces" (canonical traces), not both`)
	case req.hasMessages:
		if len(req.messages) == 0 {
			return nil, invalid("messages must not be empty")
		}
		if req.hasAnns && len(req.annotations) != len(req.messages) {
			return nil, invalid("annotations has %d entries but messages has %d traces: give one list (or null) per trace", len(req.annotations), len(req.messages))
		}
		if req.hasMeta && len(req.metadata) != len(req.messages) {
			return nil, invalid("metadata has %d entries but messages has %d traces: give one object (or null) per trace", len(req.metadata), len(req.messages))
		}
		batch := make([]store.NewTrace, len(req.messages))
		for i, evs := range req.messages {
			t := &trace.Trace{Events: evs}
			nt := store.NewTrace{Trace: t}
			if req.hasMeta && req.metadata[i] != nil {
				t.Metadata = req.metadata[i]
				t.Name, nt.Hierarchy = nameAndHierarchy(req.metadata[i])
			}
			if req.hasAnns {
				nt.Annotations = fromTraceAnnotations(req.annotations[i], author)
			}
			batch[i] = nt
		}
		return batch, nil
	case req.hasTraces:
		if len(req.traces) == 0 {
			return nil, invalid("traces must not be empty")
		}
		if req.hasAnns || req.hasMeta {
			return nil, invalid(`with "traces", annotations and metadata go inside each trace`)
		}
		batch := make([]store.NewTrace, len(req.traces))
		for i, t := range req.traces {
			nt := store.NewTrace{Trace: t, Annotations: fromTraceAnnotations(t.Annotations, author)}
			_, nt.Hierarchy = nameAndHierarchy(t.Metadata)
			t.Annotations = nil
			batch[i] = nt
		}
		return batch, nil
	}
	return nil, jsonError(req.body, jsonscan.New(req.body).Errorf(`the body needs "messages": a list of traces, each a list of events`))
}

// datasetForPush finds the caller's dataset by name, creating it (private)
// on first push. Two first pushes racing both end up with the same one.
func (s *Server) datasetForPush(ctx context.Context, p *principal, name string) (store.Dataset, error) {
	for range 3 {
		d, err := s.st.DatasetByName(ctx, p.User.ID, name)
		if !errors.Is(err, store.ErrNotFound) {
			return d, err
		}
		d, err = s.st.CreateDataset(ctx, store.Dataset{OwnerID: p.User.ID, Name: name, Metadata: json.RawMessage("{}")})
		if !errors.Is(err, store.ErrConflict) {
			return d, err
		}
	}
	return store.Dataset{}, errorf(http.StatusConflict, codeConflict, "dataset %q is being created and deleted concurrently", name)
}

// nameAndHierarchy reads Invariant's "name" and "hierarchy_path" from trace
// metadata, skipping everything else.
func nameAndHierarchy(meta json.RawMessage) (name string, hierarchy []string) {
	if len(meta) == 0 {
		return "", nil
	}
	s := jsonscan.New(meta)
	if s.Peek() != jsonscan.Object {
		return "", nil
	}
	s.Object(func(key string) error {
		switch {
		case key == "name" && s.Peek() == jsonscan.String:
			name, _ = s.String(key)
			return nil
		case key == "hierarchy_path" && s.Peek() == jsonscan.Array:
			return s.Array(func(int) error {
				if s.Peek() != jsonscan.String {
					return s.Skip()
				}
				v, err := s.String(key)
				hierarchy = append(hierarchy, v)
				return err
			})
		}
		return s.Skip()
	})
	return name, hierarchy
}

// pushStore is what pushing traces asks of the store.
type pushStore interface {
	AddTracesWith(ctx context.Context, ownerID, datasetID string, traces []store.NewTrace, opt store.AddOptions) (store.AddResult, error)
	CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error)
	DatasetByName(ctx context.Context, ownerID, name string) (store.Dataset, error)
}
