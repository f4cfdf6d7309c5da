package server

import (
	"context"
	"encoding/json"
	"errors"
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
	ids, err := s.st.AddTraces(r.Context(), p.User.ID, datasetID, batch)
	if err != nil {
		return err
	}
	resp := struct {
		ID      []string `json:"id"`
		Dataset string   `json:"dataset,omitempty"`
	}{ids, req.dataset}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// pushRequest is the body of a push, decoded.
type pushRequest struct {
	body        []byte
	messages    [][]trace.Event // the Invariant shape
	traces      []*trace.Trace  // Lookout's canonical traces
	annotations [][]trace.Annotation
	metadata    []json.RawMessage
	dataset     string
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
