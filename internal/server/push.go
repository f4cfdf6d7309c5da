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
	var (
		messages    [][]trace.Event
		traces      []*trace.Trace
		annotations [][]trace.Annotation
		metadata    []json.RawMessage
		dataset     string
		hasMessages bool
		hasTraces   bool
		hasAnns     bool
		hasMeta     bool
		hasDataset  bool
	)
	body, err := decodeBody(r, map[string]member{
		"messages": func(s *jsonscan.Scanner) error {
			hasMessages = true
			if err := s.Expect(jsonscan.Array, "messages (a list of traces, each a list of events)"); err != nil {
				return err
			}
			messages = [][]trace.Event{}
			return s.Array(func(int) error {
				evs, err := trace.DecodeEvents(s, "a trace (a list of events)")
				messages = append(messages, evs)
				return err
			})
		},
		"traces": func(s *jsonscan.Scanner) error {
			hasTraces = true
			if err := s.Expect(jsonscan.Array, "traces (a list of canonical traces)"); err != nil {
				return err
			}
			traces = []*trace.Trace{}
			return s.Array(func(int) error {
				t := new(trace.Trace)
				traces = append(traces, t)
				return trace.DecodeTrace(s, t)
			})
		},
		"annotations": func(s *jsonscan.Scanner) error {
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			hasAnns = true
			if err := s.Expect(jsonscan.Array, "annotations (one list of annotations, or null, per trace)"); err != nil {
				return err
			}
			annotations = [][]trace.Annotation{}
			return s.Array(func(int) error {
				if s.Peek() == jsonscan.Null {
					annotations = append(annotations, nil)
					return s.Null()
				}
				as, err := trace.DecodeAnnotations(s)
				annotations = append(annotations, as)
				return err
			})
		},
		"metadata": func(s *jsonscan.Scanner) error {
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			hasMeta = true
			if err := s.Expect(jsonscan.Array, "metadata (one object, or null, per trace)"); err != nil {
				return err
			}
			metadata = []json.RawMessage{}
			return s.Array(func(int) error {
				m, err := trace.DecodeObject(s, "metadata of a trace")
				metadata = append(metadata, m)
				return err
			})
		},
		"dataset": optStr(&dataset, &hasDataset, "dataset (a name)"),
	})
	if err != nil {
		return err
	}
	invalid := func(format string, args ...any) error {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, format, args...)
	}
	var batch []store.NewTrace
	switch {
	case hasMessages && hasTraces:
		return invalid(`send either "messages" (the Invariant shape) or "traces" (canonical traces), not both`)
	case hasMessages:
		if len(messages) == 0 {
			return invalid("messages must not be empty")
		}
		if hasAnns && len(annotations) != len(messages) {
			return invalid("annotations has %d entries but messages has %d traces: give one list (or null) per trace", len(annotations), len(messages))
		}
		if hasMeta && len(metadata) != len(messages) {
			return invalid("metadata has %d entries but messages has %d traces: give one object (or null) per trace", len(metadata), len(messages))
		}
		batch = make([]store.NewTrace, len(messages))
		for i, evs := range messages {
			t := &trace.Trace{Events: evs}
			nt := store.NewTrace{Trace: t}
			if hasMeta && metadata[i] != nil {
				t.Metadata = metadata[i]
				t.Name, nt.Hierarchy = nameAndHierarchy(metadata[i])
			}
			if hasAnns {
				nt.Annotations = fromTraceAnnotations(annotations[i], p.User.Name)
			}
			batch[i] = nt
		}
	case hasTraces:
		if len(traces) == 0 {
			return invalid("traces must not be empty")
		}
		if hasAnns || hasMeta {
			return invalid(`with "traces", annotations and metadata go inside each trace`)
		}
		batch = make([]store.NewTrace, len(traces))
		for i, t := range traces {
			nt := store.NewTrace{Trace: t, Annotations: fromTraceAnnotations(t.Annotations, p.User.Name)}
			_, nt.Hierarchy = nameAndHierarchy(t.Metadata)
			t.Annotations = nil
			batch[i] = nt
		}
	default:
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "messages": a list of traces, each a list of events`))
	}

	var datasetID string
	if hasDataset {
		if err := validName("dataset name", dataset); err != nil {
			return err
		}
		d, err := s.datasetForPush(r.Context(), p, dataset)
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
	}{ids, dataset}
	writeJSON(w, http.StatusOK, resp)
	return nil
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
