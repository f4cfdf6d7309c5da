package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
)

// Error codes of the API, one per kind of failure. Clients switch on them.
const (
	codeInvalidJSON  = "invalid_json"       // 400: the body is not well-formed JSON
	codeBadRequest   = "bad_request"        // 400: a query parameter or header is wrong
	codeUnauthorized = "unauthorized"       // 401: no or a wrong credential
	codeForbidden    = "forbidden"          // 403: authenticated but not allowed
	codeNotFound     = "not_found"          // 404
	codeMethod       = "method_not_allowed" // 405
	codeConflict     = "conflict"           // 409
	codeTimeout      = "timeout"            // 408: the body arrived too slowly
	codeTooLarge     = "body_too_large"     // 413
	codeTooMany      = "too_many_requests"  // 429: wait Retry-After seconds
	codeUnsupported  = "unsupported_media"  // 415
	codeInvalid      = "invalid"            // 422: well-formed JSON that breaks a rule
	codeInvalidQuery = "invalid_query"      // 400: a search query that does not parse
	codeInternal     = "internal"           // 500
	codeUnavailable  = "unavailable"        // 503: busy, the database is unreachable, or the request was cancelled
)

// dbRetryAfter is the Retry-After of a request that found the database
// unreachable: a restart of PostgreSQL takes a few seconds, and OTLP
// exporters back off 5s at first anyway; sooner would only hammer a
// database coming back.
const dbRetryAfter = 5

// apiError is an error with its HTTP status, written as
// {"error": {"code", "message", "details"}}.
type apiError struct {
	Status     int
	Code       string
	Message    string
	Details    any
	RetryAfter int // seconds, sent as Retry-After when > 0
}

func (e *apiError) Error() string { return e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) *apiError {
	return errorf(http.StatusNotFound, codeNotFound, "%s not found", what)
}

// jsonPlace is where in a request body a JSON error is.
type jsonPlace struct {
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Path string `json:"path"`
}

// jsonError turns a decoding error from the scanner into an API error that
// names the place: line and column in the body and the JSON path. Syntax
// errors are 400; a well-formed body with a value of the wrong type or that
// breaks a rule is 422. body is the whole request body the offset refers to.
func jsonError(body []byte, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var se *jsonscan.Error
	if !errors.As(err, &se) {
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s", err.Error())
	}
	status, code, kind := http.StatusUnprocessableEntity, codeInvalid, "invalid request body"
	// A syntax error anywhere in the body wins over the rule error: find the
	// first one (only on this failure path, so the happy path scans once).
	// Nesting past the limit is not syntax: the rule error stands.
	sc := jsonscan.New(body)
	serr := sc.Skip()
	if serr == nil {
		serr = sc.End()
	}
	var syn *jsonscan.Error
	if errors.As(serr, &syn) && !syn.Rule {
		se = syn
		status, code, kind = http.StatusBadRequest, codeInvalidJSON, "invalid JSON"
	}
	line, col := jsonscan.LineCol(body, se.Offset)
	return &apiError{
		Status:  status,
		Code:    code,
		Message: fmt.Sprintf("%s at line %d, column %d (%s): %s", kind, line, col, se.Path, se.Msg),
		Details: jsonPlace{Line: line, Col: col, Path: se.Path},
	}
}

// toAPIError maps any error to its status, in this one place: store and eval errors,
// body limits, cancelled requests, and API errors as they are.
func toAPIError(err error) *apiError {
	var ae *apiError
	var tooLarge *http.MaxBytesError
	var qe *search.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &qe):
		return queryError(qe)
	case errors.As(err, &tooLarge):
		return tooLargeError(tooLarge.Limit)
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, codeNotFound, "%s", err.Error())
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, codeConflict, "%s", err.Error())
	case errors.Is(err, store.ErrInvalid), errors.Is(err, eval.ErrInvalid):
		return errorf(http.StatusUnprocessableEntity, codeInvalid, "%s", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, RetryAfter: dbRetryAfter,
			Message: "the database is unreachable (or locked by another process); retry in a few seconds"}
	case errors.Is(err, policy.ErrBusy):
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, RetryAfter: 1,
			Message: "too many policy checks are running; retry in a moment"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "request cancelled: %s", err.Error())
	}
	return errorf(http.StatusInternalServerError, codeInternal, "internal error")
}

func tooLargeError(limit int64) *apiError {
	return &apiError{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    codeTooLarge,
		Message: fmt.Sprintf("request body larger than the limit of %s (lookout serve --max-body)", formatSize(limit)),
		Details: map[string]int64{"limit": limit},
	}
}

// writeError writes err as the JSON error body; internal errors are logged
// with their cause, which the client does not see.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	if ae.Status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details any    `json:"details,omitempty"`
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	writeJSON(w, ae.Status, map[string]body{"error": {ae.Code, ae.Message, ae.Details}})
}

// formatSize prints a byte count as people write it: 64MiB, 512KiB, 100B.
func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
