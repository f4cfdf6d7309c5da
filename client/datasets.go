package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Dataset is a named collection of traces.
type Dataset struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Owner      string          `json:"owner"`
	Public     bool            `json:"public"`
	Metadata   json.RawMessage `json:"metadata"`
	CreatedAt  time.Time       `json:"created_at"`
	LastPushed *time.Time      `json:"last_pushed,omitempty"`
	TraceCount int64           `json:"trace_count"`
}

// CreateDataset makes a dataset; metadata may be nil.
func (c *Client) CreateDataset(ctx context.Context, name string, public bool, metadata json.RawMessage) (Dataset, error) {
	in := map[string]any{"name": name, "public": public}
	if metadata != nil {
		in["metadata"] = metadata
	}
	var d Dataset
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/datasets", nil, in, &d)
	return d, err
}

// DatasetFilter narrows a dataset list.
type DatasetFilter struct {
	Name  string // exact name
	Owner string // owner's user name
	Mine  bool   // only the caller's own
}

// Datasets lists the caller's datasets and every public one.
func (c *Client) Datasets(ctx context.Context, f DatasetFilter) ([]Dataset, error) {
	q := url.Values{}
	if f.Name != "" {
		q.Set("name", f.Name)
	}
	if f.Owner != "" {
		q.Set("owner", f.Owner)
	}
	if f.Mine {
		q.Set("mine", "true")
	}
	var out struct {
		Datasets []Dataset `json:"datasets"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/datasets", q, nil, &out)
	return out.Datasets, err
}

// FindDataset finds a dataset by name: the caller's own, else the one public
// dataset of that name. It is an *Error with status 404 when there is none.
func (c *Client) FindDataset(ctx context.Context, name string) (Dataset, error) {
	ds, err := c.Datasets(ctx, DatasetFilter{Name: name, Mine: true})
	if err != nil {
		return Dataset{}, err
	}
	if len(ds) > 0 {
		return ds[0], nil
	}
	if ds, err = c.Datasets(ctx, DatasetFilter{Name: name}); err != nil {
		return Dataset{}, err
	}
	switch len(ds) {
	case 0:
		msg := fmt.Sprintf("no dataset named %q", name)
		if me, err := c.Me(ctx); err == nil && me.User == nil {
			// Anonymous, on a server with users: only public datasets are
			// visible, so the one asked for may well exist.
			msg = fmt.Sprintf("no public dataset named %q, and this request is anonymous: pass an API key (--api-key or LOOKOUT_API_KEY) to reach your own", name)
		}
		return Dataset{}, &Error{Status: http.StatusNotFound, Code: "not_found", Message: msg}
	case 1:
		return ds[0], nil
	}
	return Dataset{}, &Error{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf("%d public datasets are named %q: give its id", len(ds), name)}
}

// Dataset gets a dataset by id.
func (c *Client) Dataset(ctx context.Context, id string) (Dataset, error) {
	var d Dataset
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/datasets/"+url.PathEscape(id), nil, nil, &d)
	return d, err
}

// DeleteDataset deletes a dataset with its traces and annotations.
func (c *Client) DeleteDataset(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/v1/datasets/"+url.PathEscape(id), nil, nil, nil)
}

// Metadata gets a dataset's metadata object.
func (c *Client) Metadata(ctx context.Context, datasetID string) (json.RawMessage, error) {
	var m json.RawMessage
	err := c.do(ctx, http.MethodGet, "/api/v1/datasets/"+url.PathEscape(datasetID)+"/metadata", nil, nil, "", &m)
	return m, err
}

// SetMetadata merges meta into the dataset's metadata (top-level keys of
// meta win), or replaces it, and returns the result.
func (c *Client) SetMetadata(ctx context.Context, datasetID string, meta json.RawMessage, replace bool) (json.RawMessage, error) {
	q := url.Values{"mode": {"merge"}}
	if replace {
		q.Set("mode", "replace")
	}
	var out json.RawMessage
	err := c.do(ctx, http.MethodPut, "/api/v1/datasets/"+url.PathEscape(datasetID)+"/metadata", q, bytes.NewReader(meta), "application/json", &out)
	return out, err
}

// UploadOptions tune Upload.
type UploadOptions struct {
	SkipInvalid bool   // store the valid traces and report the rest (default: all or nothing)
	Format      string // force a format: invariant, snorkel, mlflow, bedrock ("" = auto)
	Multipart   bool   // send as multipart/form-data instead of a raw body
	// Progress, when set, asks the server for server-sent progress events
	// and is called with each.
	Progress func(UploadProgress)
}

// UploadProgress is a progress event of an upload.
type UploadProgress struct {
	Stage  string `json:"stage"` // reading, storing
	Bytes  int64  `json:"bytes"`
	Traces int    `json:"traces"`
	Errors int    `json:"errors"`
}

// UploadError is one problem in an uploaded file.
type UploadError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Path    string `json:"path,omitempty"`
	Trace   *int   `json:"trace,omitempty"`
	Message string `json:"message"`
	Text    string `json:"text"`
}

// UploadResult is the answer to an accepted upload.
type UploadResult struct {
	Dataset Dataset       `json:"dataset"`
	Stored  int           `json:"stored"`
	IDs     []string      `json:"ids"`
	Skipped []UploadError `json:"skipped"`
}

// UploadErrors returns the per-trace errors of a rejected upload.
func UploadErrors(err error) []UploadError {
	e, ok := err.(*Error)
	if !ok || len(e.Details) == 0 {
		return nil
	}
	var d struct {
		Errors []UploadError `json:"errors"`
	}
	json.Unmarshal(e.Details, &d)
	return d.Errors
}

// Upload imports a file in any format Lookout reads into a dataset.
func (c *Client) Upload(ctx context.Context, datasetID, filename string, file io.Reader, opt UploadOptions) (UploadResult, error) {
	q := url.Values{"filename": {filename}, "mode": {"all-or-nothing"}}
	if opt.SkipInvalid {
		q.Set("mode", "skip-invalid")
	}
	if opt.Format != "" {
		q.Set("format", opt.Format)
	}
	body, ct := file, "application/octet-stream"
	if opt.Multipart {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			part, err := mw.CreateFormFile("file", filename)
			if err == nil {
				_, err = io.Copy(part, file)
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		body, ct = pr, mw.FormDataContentType()
	}
	path := "/api/v1/datasets/" + url.PathEscape(datasetID) + "/upload"
	var res UploadResult
	if opt.Progress == nil {
		err := c.do(ctx, http.MethodPost, path, q, body, ct, &res)
		return res, err
	}
	resp, err := c.sendAccept(ctx, http.MethodPost, path, q, body, ct, "text/event-stream")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "progress":
				var p UploadProgress
				if json.Unmarshal(data, &p) == nil {
					opt.Progress(p)
				}
			case "done":
				err := json.Unmarshal(data, &res)
				return res, err
			case "error":
				return res, decodeError(resp.StatusCode, data, http.MethodPost, path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	return res, fmt.Errorf("upload: the event stream ended without a result")
}

// TraceSummary is one row of a trace list.
type TraceSummary struct {
	ID              string          `json:"id"`
	Index           int64           `json:"index"`
	Name            string          `json:"name,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	EventCount      int             `json:"event_count"`
	AnnotationCount int             `json:"annotation_count"`
	CreatedAt       time.Time       `json:"created_at"`
}

// TracePage is one page of a trace list; Next is "" on the last page.
type TracePage struct {
	Traces []TraceSummary `json:"traces"`
	Next   string         `json:"next"`
}

// Traces lists a page of a dataset's traces by index, after cursor ("" for
// the first page); limit 0 is the server's default.
func (c *Client) Traces(ctx context.Context, datasetID, cursor string, limit int) (TracePage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p TracePage
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/datasets/"+url.PathEscape(datasetID)+"/traces", q, nil, &p)
	return p, err
}

// Export writes a dataset as JSON lines to w: format "invariant" (the
// default; metadata line, then messages, metadata and annotations per
// trace) or "canonical".
func (c *Client) Export(ctx context.Context, datasetID, format string, w io.Writer) (int64, error) {
	q := url.Values{}
	if format != "" {
		q.Set("format", format)
	}
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/datasets/"+url.PathEscape(datasetID)+"/export", q, nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("export cut off after %d bytes: %w", n, err)
	}
	return n, nil
}

// SearchHit is a trace that matches a search, with where the query's texts
// occur in it (addresses with code point ranges).
type SearchHit struct {
	TraceSummary
	Hits []string `json:"hits"`
}

// SearchPage is one page of search results; Next is "" on the last page.
// Total counts the matches; when TotalIsEstimate there are at least Total.
type SearchPage struct {
	Traces          []SearchHit `json:"traces"`
	Next            string      `json:"next"`
	Total           int64       `json:"total"`
	TotalIsEstimate bool        `json:"total_is_estimate"`
	Plan            string      `json:"plan"`
}

// Search runs a search query over a dataset, a page at a time after cursor
// ("" for the first page); limit 0 is the server's default. A query that
// does not parse is an *Error with status 400 whose Details give
// {"position", "column"}.
func (c *Client) Search(ctx context.Context, datasetID, query, cursor string, limit int) (SearchPage, error) {
	q := url.Values{"q": {query}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p SearchPage
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/datasets/"+url.PathEscape(datasetID)+"/search", q, nil, &p)
	return p, err
}
