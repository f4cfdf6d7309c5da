package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// EvalProgress is a run's progress.
type EvalProgress struct {
	Done   int64 `json:"done"`
	Total  int64 `json:"total"`
	Errors int64 `json:"errors"`
}

// CriterionSummary is a run's result on one criterion.
type CriterionSummary struct {
	Criterion string         `json:"criterion"`
	Type      string         `json:"type"`
	Scores    int            `json:"scores"`
	Passed    int            `json:"passed"`
	Failed    int            `json:"failed"`
	Errors    int            `json:"errors"`
	Rate      *float64       `json:"rate"`
	Mean      *float64       `json:"mean,omitempty"`
	Counts    map[string]int `json:"distribution,omitempty"`
	Required  bool           `json:"required"`
	Threshold *float64       `json:"threshold,omitempty"`
	OK        bool           `json:"ok"`
}

// EvalRun is an evaluation run.
type EvalRun struct {
	ID        string             `json:"id"`
	DatasetID string             `json:"dataset_id"`
	Name      string             `json:"name"`
	State     string             `json:"state"` // running, done, cancelled, error
	Error     string             `json:"error,omitempty"`
	Criteria  json.RawMessage    `json:"criteria"`
	Progress  EvalProgress       `json:"progress"`
	Summary   []CriterionSummary `json:"summary,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// StartEvalRun starts a run of criteria (a JSON list as in a criteria file;
// nil: the dataset's saved criteria) over a dataset.
func (c *Client) StartEvalRun(ctx context.Context, datasetID, name string, criteria json.RawMessage) (EvalRun, error) {
	in := map[string]any{"name": name}
	if criteria != nil {
		in["criteria"] = criteria
	}
	var out EvalRun
	err := c.doJSON(ctx, "POST", "/api/v1/datasets/"+url.PathEscape(datasetID)+"/eval/runs", nil, in, &out)
	return out, err
}

// EvalRun reads a run with its progress and summary.
func (c *Client) EvalRun(ctx context.Context, id string) (EvalRun, error) {
	var out EvalRun
	err := c.doJSON(ctx, "GET", "/api/v1/eval/runs/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// CancelEvalRun cancels a run.
func (c *Client) CancelEvalRun(ctx context.Context, id string) (EvalRun, error) {
	var out EvalRun
	err := c.doJSON(ctx, "POST", "/api/v1/eval/runs/"+url.PathEscape(id)+"/cancel", nil, nil, &out)
	return out, err
}

// WaitEvalRun follows a run's progress events until it ends and returns it
// with its summary. progress may be nil.
func (c *Client) WaitEvalRun(ctx context.Context, id string, progress func(EvalProgress)) (EvalRun, error) {
	resp, err := c.sendAccept(ctx, "GET", "/api/v1/eval/runs/"+url.PathEscape(id)+"/events", nil, nil, "", "text/event-stream")
	if err != nil {
		return EvalRun{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "done":
				var run EvalRun
				if err := json.Unmarshal(data, &run); err != nil {
					return EvalRun{}, fmt.Errorf("run %s: the done event: %w", id, err)
				}
				return run, nil
			case "error":
				return EvalRun{}, decodeError(500, data, "GET", "/api/v1/eval/runs/"+id+"/events")
			default:
				var p struct{ Progress EvalProgress }
				if json.Unmarshal(data, &p) == nil && progress != nil {
					progress(p.Progress)
				}
			}
			event = ""
		}
	}
	if err := sc.Err(); err != nil {
		return EvalRun{}, err
	}
	return EvalRun{}, fmt.Errorf("run %s: the event stream ended before the run did", id)
}
