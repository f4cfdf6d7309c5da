package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// GatewayStep is one guarded step of a gateway session (POST
// /api/v1/gateway/{dataset}/steps): the events are checked against the
// dataset's guardrails with the session's earlier events as the past,
// then appended to the session's trace (created by the first step).
type GatewayStep struct {
	Session  string          `json:"session"`            // 1-200 characters; one trace
	Events   json.RawMessage `json:"events"`             // a JSON array of events (Invariant/OpenAI message shape)
	Metadata json.RawMessage `json:"metadata,omitempty"` // stored on the trace when the step creates it
}

// GatewayVerdict is the answer to a step.
type GatewayVerdict struct {
	TraceID string `json:"trace_id"`
	First   int    `json:"first"` // the index in the trace of the first event sent
	Blocked bool   `json:"blocked"`
	// Message is the blocking rules' messages joined by "; " (when
	// Blocked).
	Message    string          `json:"message,omitempty"`
	Violations json.RawMessage `json:"violations,omitempty"`
}

// GatewayStep sends one step to the dataset's gateway (the dataset is
// created if missing).
func (c *Client) GatewayStep(ctx context.Context, dataset string, step GatewayStep) (GatewayVerdict, error) {
	var v GatewayVerdict
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/gateway/"+url.PathEscape(dataset)+"/steps", nil, step, &v)
	return v, err
}
