// Package store defines what Lookout keeps — users, API keys, datasets,
// traces, annotations and saved policies — behind small interfaces, with one
// backend per sibling package (sqlite, postgres). The storetest package runs
// one conformance suite against every backend.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// Errors every backend returns (wrapped with %w and context); the server maps
// them to HTTP status codes in one place.
var (
	ErrNotFound = errors.New("not found")       // 404
	ErrConflict = errors.New("already exists")  // 409
	ErrInvalid  = errors.New("invalid request") // 400/422
	// ErrUnavailable: the database cannot be reached (down, restarting,
	// out of connections) or is locked by another process: retry the
	// request later. 503 with Retry-After.
	ErrUnavailable = errors.New("the database cannot be reached; retry")
)

// User is an account. Until the first user exists the server runs in local
// mode as LocalUser.
type User struct {
	ID           string
	Name         string
	PasswordHash string // bcrypt-like or argon2 hash; never the password
	CreatedAt    time.Time
}

// LocalUserName names the implicit user of local mode (no users yet).
const LocalUserName = "local"

// APIKey is a bearer key; only its SHA-256 hash is stored.
type APIKey struct {
	ID        string
	UserID    string
	Name      string
	Hash      string // hex SHA-256 of the key
	Last4     string // the key's last four characters, for display
	CreatedAt time.Time
	RevokedAt *time.Time
	LastUsed  *time.Time
}

// Dataset is a named collection of traces owned by a user.
type Dataset struct {
	ID         string
	OwnerID    string
	OwnerName  string
	Name       string // unique per owner
	Public     bool
	Metadata   json.RawMessage // JSON object
	CreatedAt  time.Time
	LastPushed *time.Time
	TraceCount int64
}

// StoredTrace is a trace as kept: its content plus where it lives.
type StoredTrace struct {
	ID        string // UUID
	DatasetID string // "" for a trace outside any dataset
	OwnerID   string
	Index     int64 // position in the dataset, unique per dataset
	Hierarchy []string
	CreatedAt time.Time
	Trace     *trace.Trace // Name, Metadata, Events, Spans; annotations live apart
}

// TraceSummary is one row of a trace list.
type TraceSummary struct {
	ID              string
	Index           int64
	Name            string
	Metadata        json.RawMessage
	EventCount      int
	AnnotationCount int
	// ViolationCount counts the annotations with source "analyzer" (policy
	// results), among AnnotationCount.
	ViolationCount int
	CreatedAt      time.Time
	Digest         Digest
}

// Digest is what a trace list shows of a trace's content, computed when
// the trace is written (and brought up to date by appends), so that a list
// reads no trace content.
type Digest struct {
	// FirstUser is the text of the first event with role "user" (a list
	// content's text parts joined by newlines), cut to MaxFirstUser UTF-16
	// code units (as the explorer counts) without splitting a character.
	FirstUser string
	ToolCalls int // tool calls of the events
	Usage     Usage
	// Tools counts the tool calls by tool name ("" for calls with none)
	// and, of them, those whose output reads as an error (ToolError).
	Tools map[string]ToolStats
}

// ToolStats are a tool's calls and errors.
type ToolStats struct{ Calls, Errors int }

// MaxFirstUser is how many UTF-16 code units of the first user message a
// Digest keeps.
const MaxFirstUser = 200

// Usage is a trace's token and cost totals as kept for lists
// (internal/usage's reading of its spans): the cost its sources recorded,
// and the tokens of the spans they did not price, by model, for the reader
// to price with its own price table.
type Usage struct {
	Input, Output, Total int64
	Has                  uint8   // usage.HasInput, HasOutput, HasTotal, HasCost
	Cost                 float64 // as recorded by the sources
	// Unpriced counts the spans that used tokens and recorded no cost;
	// ByModel those of them with a model and tokens in or out, which a
	// price table may price.
	Unpriced int
	ByModel  map[string]ModelTokens
	Bounds   usage.Bounds
	// Models is every span that counts in the totals by model ("" for
	// spans with none): tokens in and out and the cost recorded (ByModel
	// is the part with no cost recorded, to price).
	Models map[string]ModelUsage
	// LLMLatency is a histogram of the latencies of the spans with a
	// model (model calls), as recorded or else from the span's times:
	// bucket k (LatencyBucket) counts latencies from 2^(k/4) ms up to
	// 2^((k+1)/4) ms.
	LLMLatency map[int]int
}

// ModelUsage is what a model's spans used, with the cost their sources
// recorded.
type ModelUsage struct {
	Input, Output int64
	Cost          float64
	Spans         int
}

// ModelTokens are a model's tokens in and out over Spans spans.
type ModelTokens struct {
	Input, Output int64
	Spans         int
}

// Annotation is a note at an address of a trace.
type Annotation struct {
	ID        string
	TraceID   string
	Address   string
	Content   string
	Source    string // "user", "analyzer", "search", ...
	Author    string // user id or name; "" for machine sources
	Extra     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Policy is a guardrail policy saved with a dataset.
type Policy struct {
	ID        string
	DatasetID string
	Name      string
	Source    string
	// Mode is what the gateway does with a violation: PolicyBlock refuses
	// the call, PolicyLog lets it through; both record the violation.
	// "" is stored as PolicyLog.
	Mode      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Policy modes.
const (
	PolicyBlock = "block"
	PolicyLog   = "log"
)

// Page asks for one page of a list: after Cursor (opaque; "" = start),
// at most Limit items (the backend caps it).
type Page struct {
	Cursor string
	Limit  int
	// Sort orders a trace list (ListTraces): "" or "time" by index,
	// "duration", "tokens", "cost", "violations", or "score:<criterion>";
	// Desc reverses it. Ties go by index, in the same direction. A trace
	// without the value (no timestamps, no tokens, no cost) sorts below
	// every value; one with no score on the criterion comes after those
	// with one, by index, in either direction. Other lists ignore both.
	Sort string
	Desc bool
	// Offset, with no Cursor, starts a sorted list (Sort or Desc set) that
	// many traces in: what an explorer scrolled far down asks for. The
	// position is found in the sort's index; the cursor returned
	// continues from there.
	Offset int
}

// Users keeps accounts and API keys.
type Users interface {
	// CountUsers counts the users, not counting the local-mode user.
	CountUsers(ctx context.Context) (int, error)
	// CreateUser adds a user. The first one takes over what the local-mode
	// user owns: its datasets and traces, benchmarks and API keys.
	CreateUser(ctx context.Context, name, passwordHash string) (User, error)
	UserByName(ctx context.Context, name string) (User, error)
	UserByID(ctx context.Context, id string) (User, error)
	// LocalUser returns (creating on first use) the implicit local-mode user.
	LocalUser(ctx context.Context) (User, error)

	CreateAPIKey(ctx context.Context, userID, name, hash, last4 string) (APIKey, error)
	ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error)
	RevokeAPIKey(ctx context.Context, userID, keyID string) error
	// UserByAPIKey resolves a key hash of a key that is not revoked, and
	// records its use.
	UserByAPIKey(ctx context.Context, hash string) (User, error)

	CreateSession(ctx context.Context, userID, tokenHash string, expires time.Time) error
	UserBySession(ctx context.Context, tokenHash string) (User, error)
	DeleteSession(ctx context.Context, tokenHash string) error
}

// Datasets keeps datasets.
type Datasets interface {
	CreateDataset(ctx context.Context, d Dataset) (Dataset, error) // ErrConflict on a taken name
	Dataset(ctx context.Context, id string) (Dataset, error)
	DatasetByName(ctx context.Context, ownerID, name string) (Dataset, error)
	// ListDatasets returns the user's datasets and every public one.
	ListDatasets(ctx context.Context, userID string) ([]Dataset, error)
	DeleteDataset(ctx context.Context, id string) error // its traces, annotations and policies go too
	// SetDatasetPublic shares a dataset with everyone (public) or makes it
	// private again.
	SetDatasetPublic(ctx context.Context, id string, public bool) error
	// SetDatasetMetadata merges (replace=false: top-level keys of meta
	// overwrite) or replaces the metadata object and returns the result.
	SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error)
}

// NewTrace is a trace to add, with the annotations that come with it
// (Trace.Annotations must be empty: they go in Annotations, else ErrInvalid).
type NewTrace struct {
	Trace       *trace.Trace
	Annotations []Annotation
	Hierarchy   []string
}

// OnConflict says what AddTracesWith does with a trace whose given index
// its dataset already holds, or an earlier trace of the batch gives too.
type OnConflict uint8

const (
	ConflictFail   OnConflict = iota // the batch fails with *IndexTakenError (ErrConflict)
	ConflictSkip                     // the trace is not stored
	ConflictAppend                   // the trace gets an index after the last one
)

// AddOptions tune AddTracesWith.
type AddOptions struct {
	OnConflict OnConflict
	// HandOver gives the traces to the store: the caller changes none of
	// them after the call, and the search index may use them as they are
	// instead of decoding what was stored.
	HandOver bool
}

// AddResult is what AddTracesWith did.
type AddResult struct {
	IDs       []string        // one per trace, in order; "" for a skipped one
	Conflicts []IndexConflict // the traces whose index was taken, in order
}

// IndexConflict is a trace of a batch whose given index was taken.
type IndexConflict struct {
	Trace    int   // its place in the batch, from 0
	Index    int64 // the index it gave
	NewIndex int64 // with ConflictAppend, the index it got; -1 when skipped
}

// IndexTakenError fails a batch (ConflictFail) at its first trace whose
// given index was taken. It is ErrConflict.
type IndexTakenError struct {
	Trace   int   // the trace's place in the batch, from 0
	Index   int64 // its index
	InBatch int   // the earlier trace of the batch with the index; -1 when the dataset holds it
}

func (e *IndexTakenError) Error() string {
	if e.InBatch >= 0 {
		return fmt.Sprintf("index %d %s in the batch: traces %d and %d give it", e.Index, ErrConflict, e.InBatch, e.Trace)
	}
	return fmt.Sprintf("index %d %s in the dataset: trace %d of the batch gives it", e.Index, ErrConflict, e.Trace)
}

func (e *IndexTakenError) Unwrap() error { return ErrConflict }

// Traces keeps traces.
type Traces interface {
	// AddTraces stores traces atomically: all of them or, on any error, none.
	// In a dataset each gets the next index (a trace's own Index is kept
	// when given and free; a taken one is an *IndexTakenError, ErrConflict).
	// Returns the new ids in order. The dataset's LastPushed is updated.
	AddTraces(ctx context.Context, ownerID, datasetID string, traces []NewTrace) ([]string, error)
	// AddTracesWith is AddTraces with options: what becomes of a trace
	// whose given index is taken.
	AddTracesWith(ctx context.Context, ownerID, datasetID string, traces []NewTrace, opt AddOptions) (AddResult, error)
	Trace(ctx context.Context, id string) (StoredTrace, error)
	// ListTraces lists a dataset's traces by index.
	ListTraces(ctx context.Context, datasetID string, page Page) (items []TraceSummary, next string, err error)
	// AppendEvents adds events to the end of a stored trace (a live trace).
	AppendEvents(ctx context.Context, id string, events []trace.Event) error
	DeleteTrace(ctx context.Context, id string) error
}

// Annotations keeps annotations.
type Annotations interface {
	CreateAnnotation(ctx context.Context, a Annotation) (Annotation, error)
	ListAnnotations(ctx context.Context, traceID string) ([]Annotation, error)
	UpdateAnnotation(ctx context.Context, a Annotation) (Annotation, error) // content and extra
	DeleteAnnotation(ctx context.Context, id string) error
	// ReplaceAnnotations atomically replaces every annotation of one source
	// on a trace (e.g. a policy's earlier results).
	ReplaceAnnotations(ctx context.Context, traceID, source string, as []Annotation) error
	// ReplaceAnnotationsOf is ReplaceAnnotations limited to the annotations
	// of source whose extra object has member key (letters, digits, _) equal
	// to the string value: one policy's results among the analyzer's, with
	// key "policy_id". The new annotations should carry that member too.
	ReplaceAnnotationsOf(ctx context.Context, traceID, source, key, value string, as []Annotation) error
}

// Policies keeps saved policies.
type Policies interface {
	SavePolicy(ctx context.Context, p Policy) (Policy, error) // create, or update by (dataset, name)
	// CreatePolicy creates a policy; a name the dataset already has is
	// ErrConflict, also when two creations race.
	CreatePolicy(ctx context.Context, p Policy) (Policy, error)
	ListPolicies(ctx context.Context, datasetID string) ([]Policy, error)
	Policy(ctx context.Context, id string) (Policy, error)
	DeletePolicy(ctx context.Context, id string) error
}

// Conversation is a gateway conversation's trace as last recorded: the
// head is a hash of its events so far (internal/gateway, Heads).
type Conversation struct {
	TraceID string
	Head    string
	Events  int // the trace's event count
}

// ConversationStep is one recorded gateway call. With TraceID "" it
// creates a trace (Trace, in the dataset, with the next index); otherwise
// it appends Events and Spans to trace TraceID, which must hold exactly
// ExpectEvents events (else ErrConflict: another call extended it first).
// Either way the trace's head becomes Head and Annotations are added, in
// the same transaction.
type ConversationStep struct {
	TraceID      string
	ExpectEvents int
	Trace        *trace.Trace // a new trace (TraceID == "")
	Events       []trace.Event
	Spans        []trace.Span
	Head         string
	Annotations  []Annotation
	// Exclusive: Head names one conversation of the dataset (a session
	// of guarded steps), so a new trace is refused with ErrConflict when
	// the dataset holds a conversation of Head already (another server
	// started it meanwhile).
	Exclusive bool
}

// Conversations keeps the gateway's conversations: traces that grow one
// model or tool call at a time and are found again by their head.
type Conversations interface {
	// FindConversation returns the dataset's conversation whose head is
	// one of heads (the one with the most events when several match, the
	// latest recorded among equals), or ErrNotFound (also for no heads).
	// It takes at most MaxConversationHeads heads (more is ErrInvalid),
	// looked up in one query.
	FindConversation(ctx context.Context, datasetID string, heads []string) (Conversation, error)
	// RecordConversation stores one step and returns the trace's id.
	RecordConversation(ctx context.Context, ownerID, datasetID string, step ConversationStep) (string, error)
	// RecordConversations stores steps of different traces of one dataset
	// in one transaction (one commit for many calls). A step refused as
	// RecordConversation would refuse it (ErrConflict, ErrNotFound,
	// ErrInvalid) is left out with its error in errs[i] and id ""; the
	// others are stored. err is a failure of the whole: nothing stored.
	RecordConversations(ctx context.Context, ownerID, datasetID string, steps []ConversationStep) (ids []string, errs []error, err error)
}

// MaxConversationHeads is how many heads FindConversation looks up at
// most.
const MaxConversationHeads = 1000

// Store is everything a backend provides.
type Store interface {
	Users
	Datasets
	Traces
	Annotations
	Policies
	Evals
	SpanTraces
	Search
	Benchmarks
	Conversations
	Dashboards
	// Ping fails (ErrUnavailable for a database that cannot be reached)
	// unless the database answers.
	Ping(ctx context.Context) error
	Close() error
}

// ---- search ----

// SearchOptions asks for one page of a search.
type SearchOptions struct {
	Page Page
	// CountCap bounds the work of the count of matching traces: unless a
	// rare term narrows the search to few traces (then the count is exact),
	// the count looks at the dataset's first CountCap traces and, when
	// there are more, scales up to an estimate (0: DefaultCountCap).
	CountCap int
	// CommonLeaf is how many index rows make a term common, so that it is
	// tested trace by trace rather than collected (0: the backend's
	// default). For tests, which try both ways, and tuning.
	CommonLeaf int
}

// DefaultCountCap is how many traces a count looks at before it estimates.
const DefaultCountCap = 1000

// SearchHit is a matching trace with where the query's texts occur in it
// (addresses with code point ranges, "messages.3.content:12-17").
type SearchHit struct {
	TraceSummary
	Hits []string
	// Snippet is the text around the first hit, when it is in a string.
	Snippet *Snippet
}

// Snippet is a hit with up to SnippetBefore code points of text before it
// and SnippetAfter after it.
type Snippet struct {
	Before, Match, After string
}

// How much text a Snippet keeps around its hit, in code points.
const (
	SnippetBefore = 40
	SnippetAfter  = 60
)

// SearchResult is a page of matching traces, in index order.
type SearchResult struct {
	Traces []SearchHit
	Next   string // cursor of the next page; "" at the end
	// Total counts the matching traces; when Estimate, it is scaled up
	// from the share that matched among the first traces counted.
	Total    int64
	Estimate bool
}

// SearchIndexStats tells how big the search index is: distinct texts,
// pieces (rows pointing into traces), facet and metadata rows, and bytes
// on disk.
type SearchIndexStats struct {
	Texts, Pieces, Facets, Meta, Bytes int64
}

// IndexBacklog is what the search index has still to do: the traces
// queued and not indexed yet, how long the oldest has waited, and the time
// the queue would take at the rate measured (0 when nothing is queued or
// no rate is known yet); Err is the indexer's last error, if it failed.
type IndexBacklog struct {
	Queued       int64
	Lag, CatchUp time.Duration
	Err          error
}

// Search answers queries from the index each backend keeps beside the
// traces. A trace's write queues it, and a background indexer indexes the
// queue; a search first waits for every trace queued before it began, so
// it sees every trace acknowledged before it, exactly once.
type Search interface {
	// SearchTraces finds a dataset's traces that match q. A query naming a
	// policy the dataset has not saved is a *search.Error.
	SearchTraces(ctx context.Context, datasetID string, q *search.Query, opts SearchOptions) (SearchResult, error)
	// Reindex rebuilds the whole index from the stored traces, reporting
	// progress (traces done, of total) as it goes; returns the traces
	// indexed.
	Reindex(ctx context.Context, progress func(done, total int64)) (int64, error)
	SearchIndexStats(ctx context.Context) (SearchIndexStats, error)
	// IndexBacklog reads the indexer's queue and measured rate.
	IndexBacklog(ctx context.Context) (IndexBacklog, error)
}

// ---- OpenTelemetry spans ----

// SpanGroup is spans of one OpenTelemetry trace, each an opaque document
// under its span id.
type SpanGroup struct {
	OTelTraceID string
	Spans       []StoredSpan
}

// StoredSpan is one span as the receiver keeps it.
type StoredSpan struct {
	SpanID string
	Data   []byte
}

// SpanTraces keeps traces that arrive as OpenTelemetry spans, over any
// number of requests.
type SpanTraces interface {
	// AddSpans stores each group's spans in a dataset, in one transaction;
	// a span id sent again replaces the span. Each group's trace is rebuilt
	// by build from all its spans so far, in span id order, and stored:
	// created with the dataset's next index on its first spans, its name,
	// metadata, events and spans replaced after (annotations stay). A group
	// whose build fails is left out whole, its error in errs[i] and its id
	// ""; the other groups are stored. ids[i] is the stored trace of
	// groups[i].
	AddSpans(ctx context.Context, ownerID, datasetID string, groups []SpanGroup,
		build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) (ids []string, errs []error, err error)

	// AcceptSpans stores each group's spans in a dataset, in one
	// transaction, and marks their traces pending instead of building
	// them (BuildPendingSpans does, once spans stop coming): a trace seen
	// for the first time gets its row, with the dataset's next index and
	// no events, metadata naming its otel_trace_id. A span id sent again
	// replaces the span. ids[i] is the trace of groups[i].
	AcceptSpans(ctx context.Context, ownerID, datasetID string, groups []SpanGroup) (ids []string, err error)
	// BuildPendingSpans builds the pending traces f selects from all their
	// stored spans (in span id order, as AddSpans), stores them with their
	// search index, and clears their marks. A trace whose build fails keeps
	// what it was stored as, loses its mark, and is returned with its
	// error; one whose spans change while it is built is built again.
	BuildPendingSpans(ctx context.Context, f PendingFilter,
		build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]PendingBuild, error)
	// PendingSpanTraces counts the pending traces.
	PendingSpanTraces(ctx context.Context) (int64, error)
}

// PendingFilter selects pending traces: TraceIDs (those of them that are
// pending), else those of DatasetID, else those whose last spans came
// before Quiet or that have been pending since before Stale, except those
// of Later, which only Quiet selects. At most Limit (0: all), those pending
// longest first.
type PendingFilter struct {
	TraceIDs  []string
	DatasetID string
	Quiet     time.Time
	Stale     time.Time
	Later     []string
	Limit     int
}

// PendingBuild is a pending trace built from Spans spans, or whose build
// failed (Err).
type PendingBuild struct {
	TraceID string
	Spans   int
	Err     error
}

// ---- evaluation ----

// Score is a grade of a trace, or of one place in it (an event or a span),
// on one criterion. Scores are versioned: a new score on the same target and
// criterion supersedes the current one, which stays as history.
type Score struct {
	ID        string
	TraceID   string
	Address   string // "" for the whole trace, else a trace address (messages.3, spans.<id>)
	Criterion string
	Value     json.RawMessage // true/false, a number, or a string (a category label)
	Comment   string
	Source    string // human, rule, code, llm
	Author    string
	RunID     string          // the evaluation run that made it, or ""
	Extra     json.RawMessage // a JSON object (e.g. a rule violation's ranges), or nil
	Version   int             // 1, 2, ... per (trace, address, criterion)
	Current   bool            // the latest version of its target and criterion
	CreatedAt time.Time
}

// ScoreFilter selects scores: by trace, by dataset or by run (one of
// them), and optionally by criterion; History includes superseded versions.
type ScoreFilter struct {
	TraceID   string
	DatasetID string
	RunID     string
	Criterion string
	History   bool
}

// Criterion is a saved criterion of a dataset: its definition is the JSON
// object of the criteria file (evaluator, expr, policy, ...).
type Criterion struct {
	ID         string
	DatasetID  string
	Name       string
	Definition json.RawMessage
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// EvalRun is one evaluation of a set of criteria over a dataset's traces.
type EvalRun struct {
	ID        string
	DatasetID string
	Name      string
	Criteria  json.RawMessage // JSON array of the criteria, frozen at creation
	State     string          // running, done, cancelled, error
	Total     int64           // traces to evaluate
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Run states.
const (
	RunRunning   = "running"
	RunDone      = "done"
	RunCancelled = "cancelled"
	RunError     = "error"
)

// Evaluation status of a trace on one criterion. A trace without a status
// row in a run is "not_evaluated" (or in progress while the run holds it).
const (
	StatusNotEvaluated = "not_evaluated"
	StatusInProgress   = "in_progress"
	StatusEvaluated    = "evaluated"
	StatusError        = "error"
)

// TraceStatus is the outcome of one criterion on one trace in a run.
type TraceStatus struct {
	TraceID   string
	Criterion string
	Status    string // evaluated or error
	Error     string
}

// TraceResult is everything a run found on one trace: its statuses and the
// scores it made. A run stores them atomically, so a trace is done or not.
type TraceResult struct {
	TraceID  string
	Statuses []TraceStatus
	Scores   []Score
}

// Evals keeps scores, criteria and evaluation runs.
type Evals interface {
	// AddScores stores scores atomically; each supersedes the current score
	// of its (trace, address, criterion). Returns them as stored.
	AddScores(ctx context.Context, scores []Score) ([]Score, error)
	Score(ctx context.Context, id string) (Score, error)
	ListScores(ctx context.Context, f ScoreFilter) ([]Score, error)
	// CurrentScores are the current scores of the traces (a page of a
	// list: its verdicts), in no order.
	CurrentScores(ctx context.Context, traceIDs []string) ([]Score, error)
	// DeleteScore removes a score; when it was current, the version before
	// it (if any) becomes current again.
	DeleteScore(ctx context.Context, id string) error

	SaveCriterion(ctx context.Context, c Criterion) (Criterion, error) // create or update by (dataset, name)
	ListCriteria(ctx context.Context, datasetID string) ([]Criterion, error)
	DeleteCriterion(ctx context.Context, id string) error

	CreateRun(ctx context.Context, r EvalRun) (EvalRun, error)
	Run(ctx context.Context, id string) (EvalRun, error)
	ListRuns(ctx context.Context, datasetID string) ([]EvalRun, error) // newest first
	// RunsIn lists the runs in a state, across datasets (the server resumes
	// the running ones at start).
	RunsIn(ctx context.Context, state string) ([]EvalRun, error)
	SetRunState(ctx context.Context, id, state, errMsg string) error
	// ClaimRun gives owner the lease of run id for lease from now, by the
	// database's clock, when the run is running and its lease is free,
	// expired or owner's already; held says whether owner holds it after.
	// A server works on a run only while it holds the run's lease, and
	// renews it, so that servers on one database never work on one run
	// together and a run whose server died is taken by another.
	ClaimRun(ctx context.Context, id, owner string, lease time.Duration) (held bool, err error)
	// ReleaseRun ends owner's lease of run id, if owner holds it, so that
	// another server takes the run at once.
	ReleaseRun(ctx context.Context, id, owner string) error
	// FinishTraces records the results of traces of a run atomically.
	FinishTraces(ctx context.Context, runID string, results []TraceResult) error
	// RunStatuses lists the statuses of a run, by trace then criterion.
	RunStatuses(ctx context.Context, runID string) ([]TraceStatus, error)
	// LatestStatuses lists, for each trace of a dataset and criterion, the
	// status in the newest run that has one.
	LatestStatuses(ctx context.Context, datasetID string) ([]TraceStatus, error)
}

// Benchmark is one version of a named benchmark: a frozen selection of tasks
// (each with its reference answer) and the criteria that grade an agent's
// traces of those tasks. Versions of a name are numbered 1, 2, ... per
// owner; a version never changes once created.
type Benchmark struct {
	ID              string
	OwnerID         string
	OwnerName       string
	Name            string
	Version         int
	Description     string
	Public          bool
	SourceDatasetID string          // the dataset the tasks were taken from ("" once it is deleted)
	Key             string          // the trace metadata key that names a task
	Criteria        json.RawMessage // JSON array of the criteria, frozen at creation
	Items           json.RawMessage // JSON array of the tasks; nil from ListBenchmarks
	ItemCount       int
	CreatedAt       time.Time
}

// BenchmarkResult is one dataset's run against a benchmark version: a
// leaderboard entry.
type BenchmarkResult struct {
	ID          string
	BenchmarkID string
	DatasetID   string
	DatasetName string // filled on reads
	OwnerName   string // the dataset's owner, filled on reads
	Accuracy    float64
	Summary     json.RawMessage // JSON object: counts and per-criterion figures
	Items       json.RawMessage // JSON array: each task's verdict
	CreatedAt   time.Time
}

// Benchmarks keeps benchmarks and their results.
type Benchmarks interface {
	// CreateBenchmark stores the next version of (owner, name).
	CreateBenchmark(ctx context.Context, b Benchmark) (Benchmark, error)
	// Benchmark returns one version with its items.
	Benchmark(ctx context.Context, id string) (Benchmark, error)
	// ListBenchmarks lists the user's benchmarks and the public ones,
	// newest first, without items.
	ListBenchmarks(ctx context.Context, userID string) ([]Benchmark, error)
	// DeleteBenchmark removes one version and its results.
	DeleteBenchmark(ctx context.Context, id string) error
	// AddBenchmarkResult stores a result, replacing the dataset's earlier
	// result for the same benchmark version.
	AddBenchmarkResult(ctx context.Context, r BenchmarkResult) (BenchmarkResult, error)
	// BenchmarkResults lists a benchmark version's results, best accuracy
	// first (newest first among equals).
	BenchmarkResults(ctx context.Context, benchmarkID string) ([]BenchmarkResult, error)
}

// LatencyBucket is the bucket of Usage.LLMLatency that counts d: four a
// doubling, from 2^(k/4) ms up to 2^((k+1)/4) ms (a microsecond or less
// counts as a microsecond).
func LatencyBucket(d time.Duration) int {
	ms := max(float64(d)/float64(time.Millisecond), 0.001)
	return int(math.Floor(4 * math.Log2(ms)))
}

// LatencyOfBucket is the middle of bucket k of Usage.LLMLatency
// (geometric: within 9% of every latency it counts).
func LatencyOfBucket(k int) time.Duration {
	return time.Duration(math.Exp2((float64(k)+0.5)/4) * float64(time.Millisecond))
}

// ---- dashboards ----

// Dashboard is a dataset's figures over a time range, computed from the
// traces' digests, violations and current scores. A trace's time is its
// first span's start, else its first event's timestamp, else when it was
// stored.
type Dashboard struct {
	// From and To bound the range (To excluded): as asked, or the first
	// and last trace's times when not.
	From, To time.Time
	// Bucket is the width of Buckets[i], which starts at Start + i*Bucket.
	Start   time.Time
	Bucket  time.Duration
	Buckets []DashboardBucket
	Totals  DashboardBucket
	// Models is usage by model ("" for spans with none).
	Models map[string]DashboardModel
	// Durations counts the traces with a duration (usage.Bounds) and
	// gives its 50th, 90th and 99th percentiles (nearest rank).
	Durations    int
	DurationPcts [3]time.Duration
	// LLMLatency adds up the traces' Usage.LLMLatency histograms.
	LLMLatency map[int]int
	// Violations counts, by policy id, the traces with a violation of the
	// policy (an annotation with source "analyzer"; "" for those that
	// name no policy).
	Violations map[string]int
	// Criteria counts, by criterion, the traces whose current boolean
	// scores all pass, and those with one that fails.
	Criteria map[string]PassFail
	Tools    map[string]ToolStats
}

// DurationPercentiles are the percentiles Dashboard.DurationPcts holds.
var DurationPercentiles = [3]float64{0.5, 0.9, 0.99}

// DashboardBucket is what the traces of a time bucket used: the cost
// their sources recorded, and the tokens they did not price, by model.
type DashboardBucket struct {
	Traces        int
	Input, Output int64
	Cost          float64
	Unpriced      int // spans with tokens and no cost recorded
	ByModel       map[string]ModelTokens
}

// DashboardModel is a model's usage: all its spans, and the part with no
// cost recorded.
type DashboardModel struct {
	ModelUsage
	Unpriced ModelTokens
}

// PassFail counts traces that pass and fail.
type PassFail struct{ Passed, Failed int }

// MaxDashboardBuckets is how many buckets a dashboard has at most.
const MaxDashboardBuckets = 60

// dashboardBuckets are the bucket widths a dashboard chooses from.
var dashboardBuckets = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 2 * 24 * time.Hour,
	7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour, 91 * 24 * time.Hour, 365 * 24 * time.Hour}

// DashboardBuckets chooses the buckets of the range [from, to): the
// narrowest width of dashboardBuckets that needs at most
// MaxDashboardBuckets, the first starting at from rounded down to a
// multiple of the width since 1970.
func DashboardBuckets(from, to time.Time) (start time.Time, width time.Duration, n int) {
	span := to.Sub(from)
	width = dashboardBuckets[len(dashboardBuckets)-1]
	for _, w := range dashboardBuckets {
		if span <= w*MaxDashboardBuckets-w { // room for the rounding down
			width = w
			break
		}
	}
	start = from.Truncate(width)
	n = int((to.Sub(start) + width - 1) / width)
	return start, width, max(n, 1)
}

// Dashboards computes dashboards.
type Dashboards interface {
	// Dashboard computes dataset datasetID's figures.
	Dashboard(ctx context.Context, datasetID string, q DashboardQuery) (Dashboard, error)
}

// DashboardQuery asks for a dashboard over [From, To); a zero From or To
// is the first or last trace's time. TotalsOnly asks for the buckets and
// totals alone.
type DashboardQuery struct {
	From, To   time.Time
	TotalsOnly bool
}
