package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

type annotationJSON struct {
	ID        string          `json:"id"`
	TraceID   string          `json:"trace_id"`
	Address   string          `json:"address"`
	Content   string          `json:"content"`
	Source    string          `json:"source"`
	Author    string          `json:"author,omitempty"`
	Extra     json.RawMessage `json:"extra,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

func toAnnotationJSON(a store.Annotation) annotationJSON {
	extra := a.Extra
	if string(extra) == "{}" || string(extra) == "null" {
		extra = nil
	}
	return annotationJSON{ID: a.ID, TraceID: a.TraceID, Address: a.Address, Content: a.Content, Source: a.Source,
		Author: a.Author, Extra: extra, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func toAnnotationsJSON(as []store.Annotation) []annotationJSON {
	out := make([]annotationJSON, len(as))
	for i, a := range as {
		out[i] = toAnnotationJSON(a)
	}
	return out
}

func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	as, err := s.st.ListAnnotations(r.Context(), t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"annotations": toAnnotationsJSON(as)})
	return nil
}

// annotationMembers are the members of an annotation in a request body.
func annotationMembers(a *store.Annotation, hasAddr, hasContent *bool) map[string]member {
	return map[string]member{
		"address": func(s *jsonscan.Scanner) error { *hasAddr = true; return str(&a.Address, "address")(s) },
		"content": func(s *jsonscan.Scanner) error { *hasContent = true; return str(&a.Content, "content")(s) },
		"source":  str(&a.Source, "source"),
		"extra":   object(&a.Extra, nil, "extra"),
	}
}

// checkAnnotation completes a and checks it against the trace it goes on:
// its address must parse and name a place in tr, as a score's must.
func checkAnnotation(a *store.Annotation, hasAddr, hasContent bool, tr *trace.Trace) error {
	if !hasAddr || a.Address == "" {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, `an annotation needs an "address" (such as messages.2.content:5-10)`)
	}
	addr, err := trace.ParseAddress(a.Address)
	if err != nil {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid,
			Message: fmt.Sprintf("address %q: %s", a.Address, err.Error()), Details: map[string]string{"address": a.Address}}
	}
	if _, err := tr.Resolve(addr); err != nil {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid,
			Message: fmt.Sprintf("address %q is not in the trace: %s", a.Address, err.Error()), Details: map[string]string{"address": a.Address}}
	}
	if !hasContent {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, `an annotation needs a "content" string`)
	}
	if a.Source == "" {
		a.Source = defaultSource
	}
	if len(a.Source) > 100 {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "source is longer than 100 bytes")
	}
	if a.Extra == nil {
		a.Extra = json.RawMessage("{}")
	}
	return nil
}

// createAnnotation adds {address, content, source?, extra?} to a trace.
func (s *Server) createAnnotation(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	a := store.Annotation{TraceID: t.ID, Author: p.User.Name}
	var hasAddr, hasContent bool
	if _, err := decodeBody(r, annotationMembers(&a, &hasAddr, &hasContent)); err != nil {
		return err
	}
	if err := checkAnnotation(&a, hasAddr, hasContent, t.Trace); err != nil {
		return err
	}
	created, err := s.st.CreateAnnotation(r.Context(), a)
	if err != nil {
		return err
	}
	s.traceChanged(t.ID)
	writeJSON(w, http.StatusCreated, toAnnotationJSON(created))
	return nil
}

// findAnnotation loads annotation aid of trace traceID (404 when the
// annotation is not on that trace).
func (s *Server) findAnnotation(r *http.Request, traceID string) (store.Annotation, error) {
	aid := r.PathValue("aid")
	as, err := s.st.ListAnnotations(r.Context(), traceID)
	if err != nil {
		return store.Annotation{}, err
	}
	for _, a := range as {
		if a.ID == aid {
			return a, nil
		}
	}
	return store.Annotation{}, notFound("annotation " + aid + " of trace " + traceID)
}

// updateAnnotation changes an annotation's content and/or extra.
func (s *Server) updateAnnotation(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	a, err := s.findAnnotation(r, t.ID)
	if err != nil {
		return err
	}
	var extraSet bool
	if _, err := decodeBody(r, map[string]member{
		"content": str(&a.Content, "content"),
		"extra":   object(&a.Extra, &extraSet, "extra"),
	}); err != nil {
		return err
	}
	if extraSet && a.Extra == nil {
		a.Extra = json.RawMessage("{}")
	}
	updated, err := s.st.UpdateAnnotation(r.Context(), a)
	if err != nil {
		return err
	}
	s.traceChanged(t.ID)
	writeJSON(w, http.StatusOK, toAnnotationJSON(updated))
	return nil
}

func (s *Server) deleteAnnotation(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	a, err := s.findAnnotation(r, t.ID)
	if err != nil {
		return err
	}
	if err := s.st.DeleteAnnotation(r.Context(), a.ID); err != nil {
		return err
	}
	s.traceChanged(t.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// replaceAnnotations atomically replaces every annotation of ?source=S on a
// trace with the body's {"annotations": [{address, content, extra?}...]}
// (an empty list removes them all).
func (s *Server) replaceAnnotations(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.traceAccess(r, p, true)
	if err != nil {
		return err
	}
	source := r.URL.Query().Get("source")
	if source == "" {
		return errorf(http.StatusBadRequest, codeBadRequest, "name the source to replace with ?source= (such as analyzer)")
	}
	var as []store.Annotation
	var seen bool
	body, err := decodeBody(r, map[string]member{
		"annotations": func(sc *jsonscan.Scanner) error {
			seen = true
			if err := sc.Expect(jsonscan.Array, "annotations"); err != nil {
				return err
			}
			return sc.Array(func(int) error {
				a := store.Annotation{TraceID: t.ID, Source: source, Author: p.User.Name}
				var hasAddr, hasContent bool
				start := sc.Offset()
				m := annotationMembers(&a, &hasAddr, &hasContent)
				delete(m, "source")
				if err := sc.Expect(jsonscan.Object, "annotation"); err != nil {
					return err
				}
				err := sc.Object(func(key string) error {
					f, ok := m[key]
					if !ok {
						return sc.Errorf("unknown member %q (known: %s)", key, knownKeys(m))
					}
					return f(sc)
				})
				if err != nil {
					return err
				}
				if err := checkAnnotation(&a, hasAddr, hasContent, t.Trace); err != nil {
					return sc.ErrorAt(start, "%s", err.Error())
				}
				as = append(as, a)
				return nil
			})
		},
	})
	if err != nil {
		return err
	}
	if !seen {
		return jsonError(body, jsonscan.New(body).Errorf(`the body needs "annotations": a list (empty to remove them all)`))
	}
	if err := s.st.ReplaceAnnotations(r.Context(), t.ID, source, as); err != nil {
		return err
	}
	s.traceChanged(t.ID)
	all, err := s.st.ListAnnotations(r.Context(), t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"annotations": toAnnotationsJSON(all)})
	return nil
}

// annotationStore is what the annotation handlers ask of the store.
type annotationStore interface {
	CreateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error)
	DeleteAnnotation(ctx context.Context, id string) error
	ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error)
	ReplaceAnnotations(ctx context.Context, traceID, source string, as []store.Annotation) error
	UpdateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error)
}
