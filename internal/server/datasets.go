package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

type datasetJSON struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Owner      string          `json:"owner"`
	Public     bool            `json:"public"`
	Metadata   json.RawMessage `json:"metadata"`
	CreatedAt  time.Time       `json:"created_at"`
	LastPushed *time.Time      `json:"last_pushed,omitempty"`
	TraceCount int64           `json:"trace_count"`
}

func toDatasetJSON(d store.Dataset) datasetJSON {
	meta := d.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	return datasetJSON{ID: d.ID, Name: d.Name, Owner: d.OwnerName, Public: d.Public, Metadata: meta,
		CreatedAt: d.CreatedAt, LastPushed: d.LastPushed, TraceCount: d.TraceCount}
}

// readableDataset loads a dataset the caller may read: their own or a
// public one. Another user's private dataset is 404, as if it did not exist.
func (s *Server) readableDataset(r *http.Request, p *principal, id string) (store.Dataset, error) {
	d, err := s.st.Dataset(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return d, notFound("dataset " + id)
	}
	if err != nil {
		return d, err
	}
	if d.Public || (!p.anonymous() && d.OwnerID == p.User.ID) {
		return d, nil
	}
	return store.Dataset{}, notFound("dataset " + id)
}

// writableDataset loads a dataset the caller owns: 401 when anonymous, 404
// for another user's private dataset, 403 for another user's public one.
func (s *Server) writableDataset(r *http.Request, p *principal, id string) (store.Dataset, error) {
	if err := s.requireUser(r, p); err != nil {
		return store.Dataset{}, err
	}
	d, err := s.readableDataset(r, p, id)
	if err != nil {
		return d, err
	}
	if d.OwnerID != p.User.ID {
		return store.Dataset{}, errorf(http.StatusForbidden, codeForbidden, "dataset %s belongs to %s", id, d.OwnerName)
	}
	return d, nil
}

func (s *Server) createDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var d store.Dataset
	if _, err := decodeBody(r, map[string]member{
		"name":     str(&d.Name, "name"),
		"public":   boolean(&d.Public, "public"),
		"metadata": object(&d.Metadata, nil, "metadata"),
	}); err != nil {
		return err
	}
	if err := validName("dataset name", d.Name); err != nil {
		return err
	}
	if d.Metadata == nil {
		d.Metadata = json.RawMessage("{}")
	}
	d.OwnerID = p.User.ID
	created, err := s.st.CreateDataset(r.Context(), d)
	if errors.Is(err, store.ErrConflict) {
		return errorf(http.StatusConflict, codeConflict, "you already have a dataset named %q", d.Name)
	}
	if err != nil {
		return err
	}
	if created.OwnerName == "" {
		created.OwnerName = p.User.Name
	}
	writeJSON(w, http.StatusCreated, toDatasetJSON(created))
	return nil
}

// listDatasets lists the caller's datasets and every public one, filtered
// by ?name=, ?owner= (a user name) and ?mine=true when given.
func (s *Server) listDatasets(w http.ResponseWriter, r *http.Request, p *principal) error {
	var uid string
	if !p.anonymous() {
		uid = p.User.ID
	}
	ds, err := s.st.ListDatasets(r.Context(), uid)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	name, owner, mine := q.Get("name"), q.Get("owner"), q.Get("mine")
	if mine != "" && mine != "true" && mine != "false" {
		return errorf(http.StatusBadRequest, codeBadRequest, "mine must be true or false, not %q", mine)
	}
	out := []datasetJSON{}
	for _, d := range ds {
		if !d.Public && (uid == "" || d.OwnerID != uid) {
			continue // belt and braces: never list another user's private dataset
		}
		if (name != "" && d.Name != name) || (owner != "" && d.OwnerName != owner) || (mine == "true" && d.OwnerID != uid) {
			continue
		}
		out = append(out, toDatasetJSON(d))
	}
	writeJSON(w, http.StatusOK, map[string]any{"datasets": out})
	return nil
}

func (s *Server) getDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDatasetJSON(d))
	return nil
}

// patchDataset changes a dataset's settings: {"public": true|false} shares
// it with everyone (read only) or makes it private again. Owner only.
func (s *Server) patchDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var public, seen bool
	setPublic := boolean(&public, "public")
	if _, err := decodeBody(r, map[string]member{
		"public": func(sc *jsonscan.Scanner) error { seen = true; return setPublic(sc) },
	}); err != nil {
		return err
	}
	if !seen {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, `nothing to change: the body sets none of "public"`)
	}
	if err := s.st.SetDatasetPublic(r.Context(), d.ID, public); err != nil {
		return err
	}
	if d, err = s.st.Dataset(r.Context(), d.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDatasetJSON(d))
	return nil
}

func (s *Server) deleteDataset(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	err = s.st.DeleteDataset(r.Context(), d.ID)
	s.forgetDataset(d.ID) // even on failure: the deletion may have been written
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getMetadata(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, append(toDatasetJSON(d).Metadata, '\n'))
	return nil
}

// putMetadata merges the body object into the dataset metadata (top-level
// keys of the body win), or replaces it with ?mode=replace.
func (s *Server) putMetadata(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	replace := false
	switch mode := r.URL.Query().Get("mode"); mode {
	case "", "merge":
	case "replace":
		replace = true
	default:
		return errorf(http.StatusBadRequest, codeBadRequest, "mode must be merge or replace, not %q", mode)
	}
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	sc := jsonscan.NewStrict(body)
	sc.SetRoot("$")
	if err := sc.Expect(jsonscan.Object, "metadata"); err != nil {
		return jsonError(body, err)
	}
	meta, err := trace.DecodeObject(sc, "metadata")
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return jsonError(body, err)
	}
	out, err := s.st.SetDatasetMetadata(r.Context(), d.ID, meta, replace)
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, append(out, '\n'))
	return nil
}

// datasetStore is what the dataset handlers ask of the store.
type datasetStore interface {
	CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error)
	Dataset(ctx context.Context, id string) (store.Dataset, error)
	DeleteDataset(ctx context.Context, id string) error
	ListDatasets(ctx context.Context, userID string) ([]store.Dataset, error)
	SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error)
	SetDatasetPublic(ctx context.Context, id string, public bool) error
}
