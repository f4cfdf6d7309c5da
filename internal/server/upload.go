package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/store"
)

// Upload modes.
const (
	modeAllOrNothing = "all-or-nothing"
	modeSkipInvalid  = "skip-invalid"
)

// decodeErrorJSON is one problem in an uploaded file.
type decodeErrorJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Path    string `json:"path,omitempty"`
	Trace   *int   `json:"trace,omitempty"` // index of the trace in the file
	Message string `json:"message"`
	Text    string `json:"text"` // FILE:LINE:COL: PATH: message, as lookout validate prints it
}

func toDecodeErrorJSON(err error) decodeErrorJSON {
	var de *decoding.Error
	if !errors.As(err, &de) {
		return decodeErrorJSON{Message: err.Error(), Text: err.Error()}
	}
	out := decodeErrorJSON{File: de.File, Line: de.Line, Col: de.Col, Path: de.Path, Message: de.Msg, Text: de.Error()}
	if de.Trace >= 0 {
		t := de.Trace
		out.Trace = &t
	}
	return out
}

// upload imports a file in any format the importers read into a dataset.
// The file is the raw body (name it with ?filename=) or the "file" part of
// a multipart/form-data body. ?format= forces a format (default auto).
// ?mode=all-or-nothing (default): any invalid trace rejects the upload with
// 422 listing every error by line and path, and nothing is stored.
// ?mode=skip-invalid: the valid traces are stored and the rejected ones
// reported. Either way the stored traces go in one transaction, so an upload
// cut off half-way leaves none of it. A dataset metadata line in the file is
// merged into the dataset's metadata. ?on_conflict= says what becomes of a
// trace whose "index" the dataset already holds: fail (the default: 409
// naming its file and line), skip (listed in "skipped"), or append (stored
// with an index after the last one, listed in "reindexed").
//
// With "Accept: text/event-stream" the answer is 200 and a stream of
// server-sent events: "progress" events {"stage": "reading"|"storing",
// "bytes", "traces", "errors"} while the upload is read and stored, then one
// "done" event with the result (the JSON of a 201 answer) or one "error"
// event with the {"error": ...} body a plain request would have got.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.writableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.monitor.admit(); err != nil {
		return err
	}
	q := r.URL.Query()
	mode := q.Get("mode")
	switch mode {
	case "":
		mode = modeAllOrNothing
	case modeAllOrNothing, modeSkipInvalid:
	default:
		return errorf(http.StatusBadRequest, codeBadRequest, "mode must be %s or %s, not %q", modeAllOrNothing, modeSkipInvalid, mode)
	}
	format, err := formats.Parse(orDefault(q.Get("format"), "auto"))
	if err != nil {
		return errorf(http.StatusBadRequest, codeBadRequest, "%s", err.Error())
	}
	onConflict, ok := conflictModes[orDefault(q.Get("on_conflict"), "fail")]
	if !ok {
		return errorf(http.StatusBadRequest, codeBadRequest, "on_conflict must be fail, skip or append, not %q", q.Get("on_conflict"))
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		res, err := s.importUpload(r, p, d, mode, onConflict, format, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, res)
		return nil
	}

	// Server-sent events. Progress is written while the body is still being
	// read: without full duplex, net/http's HTTP/1.1 server may stop the
	// body once the answer has begun.
	_ = http.NewResponseController(w).EnableFullDuplex()
	event := eventStream(w)
	last := time.Time{}
	res, err := s.importUpload(r, p, d, mode, onConflict, format, func(pr uploadProgress) {
		if pr.Stage == "reading" && time.Since(last) < 250*time.Millisecond {
			return
		}
		last = time.Now()
		event("progress", pr)
	})
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			s.log.ErrorContext(r.Context(), "upload failed", slog.Any("err", err))
		}
		event("error", map[string]any{"error": map[string]any{"code": ae.Code, "message": ae.Message, "details": ae.Details}})
		return nil
	}
	event("done", res)
	return nil
}

// uploadProgress is one progress event of an upload.
type uploadProgress struct {
	Stage  string `json:"stage"` // reading, storing
	Bytes  int64  `json:"bytes"`
	Traces int    `json:"traces"`
	Errors int    `json:"errors"`
}

type uploadResult struct {
	Dataset   datasetJSON       `json:"dataset"`
	Stored    int               `json:"stored"`
	IDs       []string          `json:"ids"`
	Skipped   []decodeErrorJSON `json:"skipped"`
	Reindexed []reindexedJSON   `json:"reindexed,omitempty"`
}

// reindexedJSON is a trace of an upload stored with a new index, as its
// own was taken (on_conflict=append).
type reindexedJSON struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Index    int64  `json:"index"`
	NewIndex int64  `json:"new_index"`
}

// importUpload reads the uploaded file and stores its traces.
func (s *Server) importUpload(r *http.Request, p *principal, d store.Dataset, mode string, onConflict store.OnConflict, format formats.Format, progress func(uploadProgress)) (*uploadResult, error) {
	if progress == nil {
		progress = func(uploadProgress) {}
	}
	file, name, err := uploadedFile(r)
	if err != nil {
		return nil, err
	}
	src := &errReader{r: file}
	dec, _, err := formats.Open(src, name, format)
	if err != nil {
		if src.tooLarge != nil {
			return nil, tooLargeError(src.tooLarge.Limit)
		}
		var u *decoding.Unsupported
		if errors.As(err, &u) {
			return nil, &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalid, Message: err.Error(),
				Details: map[string]any{"errors": []decodeErrorJSON{{File: name, Message: err.Error(), Text: err.Error()}}}}
		}
		return nil, err
	}
	var batch []store.NewTrace
	var places [][2]int // where each trace of batch starts in the file
	placer, _ := dec.(decoding.Placer)
	var problems []decodeErrorJSON
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if src.tooLarge != nil {
			return nil, tooLargeError(src.tooLarge.Limit)
		}
		if src.err != nil {
			return nil, src.err // the client went away or the connection broke
		}
		if err != nil {
			problems = append(problems, toDecodeErrorJSON(err))
			var de *decoding.Error
			if errors.As(err, &de) && de.Recoverable {
				continue
			}
			break
		}
		nt := store.NewTrace{Trace: t, Annotations: fromTraceAnnotations(t.Annotations, p.User.Name)}
		_, nt.Hierarchy = nameAndHierarchy(t.Metadata)
		t.Annotations = nil
		batch = append(batch, nt)
		if placer != nil {
			line, col := placer.Place()
			places = append(places, [2]int{line, col})
		}
		progress(uploadProgress{Stage: "reading", Bytes: src.n, Traces: len(batch), Errors: len(problems)})
	}
	if mode == modeAllOrNothing && len(problems) > 0 {
		return nil, &apiError{
			Status:  http.StatusUnprocessableEntity,
			Code:    codeInvalid,
			Message: fmt.Sprintf("upload rejected, nothing stored: %d error(s) in %s, the first: %s", len(problems), name, problems[0].Text),
			Details: map[string]any{"errors": problems},
		}
	}
	progress(uploadProgress{Stage: "storing", Bytes: src.n, Traces: len(batch), Errors: len(problems)})
	// where names a trace of batch by its place in the file.
	where := func(i int) (string, int, int) {
		if i < len(places) && places[i][0] > 0 {
			return fmt.Sprintf("%s:%d:%d", name, places[i][0], places[i][1]), places[i][0], places[i][1]
		}
		return fmt.Sprintf("%s: trace %d", name, i+1), 0, 0
	}
	ids := []string{}
	var reindexed []reindexedJSON
	if len(batch) > 0 {
		res, err := s.st.AddTracesWith(r.Context(), p.User.ID, d.ID, batch, store.AddOptions{OnConflict: onConflict, HandOver: true})
		var taken *store.IndexTakenError
		if errors.As(err, &taken) {
			at, line, col := where(taken.Trace)
			held := fmt.Sprintf("dataset %q already holds it", d.Name)
			if taken.InBatch >= 0 {
				other, _, _ := where(taken.InBatch)
				held = "so does the trace at " + other
			}
			return nil, &apiError{Status: http.StatusConflict, Code: codeConflict,
				Message: fmt.Sprintf("%s: index %d is taken: %s; nothing was stored (?on_conflict=skip or append stores the others)", at, taken.Index, held),
				Details: map[string]any{"file": name, "line": line, "col": col, "path": "$.index", "index": taken.Index}}
		}
		if err != nil {
			return nil, err
		}
		for _, id := range res.IDs {
			if id != "" {
				ids = append(ids, id)
			}
		}
		for _, c := range res.Conflicts {
			at, line, col := where(c.Trace)
			if c.NewIndex < 0 {
				msg := fmt.Sprintf("index %d is taken: dataset %q already holds it; not stored (on_conflict=skip)", c.Index, d.Name)
				problems = append(problems, decodeErrorJSON{File: name, Line: line, Col: col, Path: "$.index", Message: msg, Text: at + ": $.index: " + msg})
			} else {
				reindexed = append(reindexed, reindexedJSON{File: name, Line: line, Col: col, Index: c.Index, NewIndex: c.NewIndex})
			}
		}
	}
	if meta := dec.DatasetMetadata(); len(meta) > 0 && string(meta) != "{}" {
		if _, err := s.st.SetDatasetMetadata(r.Context(), d.ID, meta, false); err != nil {
			return nil, err
		}
	}
	if d, err = s.st.Dataset(r.Context(), d.ID); err != nil {
		return nil, err
	}
	if problems == nil {
		problems = []decodeErrorJSON{}
	}
	return &uploadResult{Dataset: toDatasetJSON(d), Stored: len(ids), IDs: ids, Skipped: problems, Reindexed: reindexed}, nil
}

// uploadedFile returns the file of an upload and its name.
func uploadedFile(r *http.Request) (io.Reader, string, error) {
	name := orDefault(r.URL.Query().Get("filename"), "upload")
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return r.Body, name, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", errorf(http.StatusBadRequest, codeBadRequest, "bad multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, "", errorf(http.StatusBadRequest, codeBadRequest, `the multipart body has no "file" part`)
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, "", err
			}
			return nil, "", errorf(http.StatusBadRequest, codeBadRequest, "bad multipart body: %v", err)
		}
		if part.FormName() == "file" {
			if fn := part.FileName(); fn != "" {
				name = fn
			}
			return part, name, nil
		}
		part.Close()
	}
}

// errReader remembers why reading the body failed, so that a body over the
// limit is 413 and a broken connection is not blamed on the file.
type errReader struct {
	r        io.Reader
	n        int64 // bytes read
	err      error
	tooLarge *http.MaxBytesError
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if err != nil && err != io.EOF {
		e.err = err
		errors.As(err, &e.tooLarge)
	}
	return n, err
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// uploadStore is what uploading a file asks of the store.
type uploadStore interface {
	AddTracesWith(ctx context.Context, ownerID, datasetID string, traces []store.NewTrace, opt store.AddOptions) (store.AddResult, error)
	Dataset(ctx context.Context, id string) (store.Dataset, error)
	SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error)
}
