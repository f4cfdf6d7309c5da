package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Trace gets a trace as canonical JSON, with its stored id, index and
// annotations.
func (c *Client) Trace(ctx context.Context, id string) (json.RawMessage, error) {
	var t json.RawMessage
	err := c.do(ctx, http.MethodGet, "/api/v1/traces/"+url.PathEscape(id), nil, nil, "", &t)
	return t, err
}

// TraceInvariant gets a trace in the Invariant shape {"messages", "metadata",
// "annotations"}.
func (c *Client) TraceInvariant(ctx context.Context, id string) (json.RawMessage, error) {
	var t json.RawMessage
	err := c.do(ctx, http.MethodGet, "/api/v1/traces/"+url.PathEscape(id), url.Values{"format": {"invariant"}}, nil, "", &t)
	return t, err
}

// AppendEvents adds events (a JSON array of events) to the end of a trace.
func (c *Client) AppendEvents(ctx context.Context, traceID string, events json.RawMessage) error {
	return c.do(ctx, http.MethodPost, "/api/v1/traces/"+url.PathEscape(traceID)+"/events", nil, bytes.NewReader(events), "application/json", nil)
}

// DeleteTrace deletes a trace.
func (c *Client) DeleteTrace(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/v1/traces/"+url.PathEscape(id), nil, nil, nil)
}

// Annotation is a note at an address of a trace.
type Annotation struct {
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

// NewAnnotation is an annotation to create.
type NewAnnotation struct {
	Address string          `json:"address"`
	Content string          `json:"content"`
	Source  string          `json:"source,omitempty"` // default "user"
	Extra   json.RawMessage `json:"extra,omitempty"`  // other members, such as {"extra_metadata": {...}}
}

// Annotations lists a trace's annotations.
func (c *Client) Annotations(ctx context.Context, traceID string) ([]Annotation, error) {
	var out struct {
		Annotations []Annotation `json:"annotations"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/api/v1/traces/"+url.PathEscape(traceID)+"/annotations", nil, nil, &out)
	return out.Annotations, err
}

// CreateAnnotation adds an annotation to a trace.
func (c *Client) CreateAnnotation(ctx context.Context, traceID string, a NewAnnotation) (Annotation, error) {
	var out Annotation
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/traces/"+url.PathEscape(traceID)+"/annotations", nil, a, &out)
	return out, err
}

// UpdateAnnotation changes an annotation's content and, when extra is not
// nil, its extra members.
func (c *Client) UpdateAnnotation(ctx context.Context, traceID, id, content string, extra json.RawMessage) (Annotation, error) {
	in := map[string]any{"content": content}
	if extra != nil {
		in["extra"] = extra
	}
	var out Annotation
	err := c.doJSON(ctx, http.MethodPut, "/api/v1/traces/"+url.PathEscape(traceID)+"/annotations/"+url.PathEscape(id), nil, in, &out)
	return out, err
}

// DeleteAnnotation deletes an annotation.
func (c *Client) DeleteAnnotation(ctx context.Context, traceID, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/v1/traces/"+url.PathEscape(traceID)+"/annotations/"+url.PathEscape(id), nil, nil, nil)
}

// ReplaceAnnotations atomically replaces every annotation of source on a
// trace (the Source of each new one is ignored) and returns all of the
// trace's annotations.
func (c *Client) ReplaceAnnotations(ctx context.Context, traceID, source string, as []NewAnnotation) ([]Annotation, error) {
	type item struct {
		Address string          `json:"address"`
		Content string          `json:"content"`
		Extra   json.RawMessage `json:"extra,omitempty"`
	}
	items := make([]item, len(as))
	for i, a := range as {
		items[i] = item{a.Address, a.Content, a.Extra}
	}
	var out struct {
		Annotations []Annotation `json:"annotations"`
	}
	err := c.doJSON(ctx, http.MethodPut, "/api/v1/traces/"+url.PathEscape(traceID)+"/annotations", url.Values{"source": {source}}, map[string]any{"annotations": items}, &out)
	return out.Annotations, err
}
