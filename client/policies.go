package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Policy is a guardrail policy saved with a dataset. Mode is what the
// gateway does with its violations: "block" refuses the call, "log" lets
// it through; both record them.
type Policy struct {
	ID        string    `json:"id"`
	DatasetID string    `json:"dataset_id"`
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Mode      string    `json:"mode"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Policy modes.
const (
	PolicyBlock = "block"
	PolicyLog   = "log"
)

// PolicyChange changes a saved policy: the fields that are not empty.
type PolicyChange struct {
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

func policiesPath(datasetID string) string {
	return "/api/v1/datasets/" + url.PathEscape(datasetID) + "/policies"
}

// Policies lists a dataset's saved policies by name.
func (c *Client) Policies(ctx context.Context, datasetID string) ([]Policy, error) {
	var out struct {
		Policies []Policy `json:"policies"`
	}
	err := c.doJSON(ctx, http.MethodGet, policiesPath(datasetID), nil, nil, &out)
	return out.Policies, err
}

// CreatePolicy saves a policy with a dataset; mode "" is log. A policy that
// does not load is an *Error with code invalid whose details hold the
// diagnostics and a caret report; a name the dataset uses is a conflict.
func (c *Client) CreatePolicy(ctx context.Context, datasetID, name, source, mode string) (Policy, error) {
	in := map[string]string{"name": name, "source": source}
	if mode != "" {
		in["mode"] = mode
	}
	var out Policy
	err := c.doJSON(ctx, http.MethodPost, policiesPath(datasetID), nil, in, &out)
	return out, err
}

// UpdatePolicy changes a saved policy.
func (c *Client) UpdatePolicy(ctx context.Context, datasetID, id string, change PolicyChange) (Policy, error) {
	var out Policy
	err := c.doJSON(ctx, http.MethodPut, policiesPath(datasetID)+"/"+url.PathEscape(id), nil, change, &out)
	return out, err
}

// DeletePolicy removes a saved policy.
func (c *Client) DeletePolicy(ctx context.Context, datasetID, id string) error {
	return c.doJSON(ctx, http.MethodDelete, policiesPath(datasetID)+"/"+url.PathEscape(id), nil, nil, nil)
}
