package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
)

// scenario is one request and what must come back.
type scenario struct {
	name   string
	kind   string // which case of the endpoint this is (see kinds), or "" for others
	method string
	path   string // {placeholders} are replaced by fixture ids
	user   string // "", "alice", "bob", or "bad" (a wrong key)
	body   string
	header []string // extra header name, value pairs
	status int
	want   []string // regexps the body must match
	absent []string // regexps the body must not match
}

// The cases every endpoint is tried with ("success, bad JSON
// (message names the place), wrong types, missing auth, another user's
// private dataset, too-large body, unknown dataset"). Which of them apply to
// which endpoint is in notApplicable; TestScenarios fails when an endpoint
// lacks one that applies.
const (
	kSuccess  = "success"
	kBadJSON  = "bad JSON"
	kTypes    = "wrong types"
	kNoAuth   = "missing auth"
	kPrivate  = "another user's private data"
	kTooLarge = "too-large body"
	kUnknown  = "unknown dataset, trace or item"
)

var kinds = []string{kSuccess, kBadJSON, kTypes, kNoAuth, kPrivate, kTooLarge, kUnknown}

// probeNotApplicable are the cases a health probe does not have.
var probeNotApplicable = map[string]string{
	kBadJSON:  "reads no body",
	kTypes:    "takes no parameters",
	kTooLarge: "reads no body",
	kNoAuth:   "a probe needs no credentials: anonymous is the success case",
	kPrivate:  "no dataset is involved",
	kUnknown:  "no dataset is involved",
}

// notApplicable lists, per route, the cases that do not apply and why.
var notApplicable = map[string]map[string]string{
	"POST /api/v1/login": {
		kNoAuth:  "logging in is how one authenticates",
		kPrivate: "no dataset is involved",
		kUnknown: "an unknown user is a wrong login (401), tried as such",
	},
	"POST /api/v1/logout": {
		kBadJSON:  "reads no body",
		kTypes:    "reads no body",
		kTooLarge: "reads no body",
		kNoAuth:   "logging out without a session is allowed (204)",
		kPrivate:  "no dataset is involved",
		kUnknown:  "no dataset is involved",
	},
	"GET /api/v1/me": {
		kBadJSON:  "reads no body",
		kTypes:    "takes no parameters",
		kTooLarge: "reads no body",
		kNoAuth:   "anonymous is a success case: it answers user null",
		kPrivate:  "no dataset is involved",
		kUnknown:  "no dataset is involved",
	},
	"GET /healthz": probeNotApplicable,
	"GET /readyz":  probeNotApplicable,
	"GET /api/v1/backlog": {
		kTypes:   "takes no parameters",
		kPrivate: "no dataset is involved: the server's counts only",
		kUnknown: "no dataset is involved",
	},
	"POST /api/v1/keys": {
		kPrivate: "a key is made for the caller only",
		kUnknown: "no dataset is involved",
	},
	"GET /api/v1/keys": {
		kBadJSON:  "reads no body",
		kTypes:    "takes no parameters",
		kTooLarge: "reads no body",
		kPrivate:  "lists the caller's keys only",
		kUnknown:  "no dataset is involved",
	},
	"DELETE /api/v1/keys/{id}": {
		kBadJSON:  "reads no body",
		kTypes:    "takes no parameters",
		kTooLarge: "reads no body",
	},
	"POST /api/v1/datasets": {
		kPrivate: "creates a dataset of the caller's",
		kUnknown: "creates a dataset",
	},
	"GET /api/v1/datasets": {
		kBadJSON:  "reads no body",
		kTooLarge: "reads no body",
		kUnknown:  "a filter that matches nothing is an empty list",
	},
	"GET /api/v1/traces/{id}/live": {
		kSuccess: "a stream that does not end: TestLiveTrace reads it",
	},
}

// readOnly routes read no body: bad JSON, wrong body types and a too-large
// body do not apply to them (wrong query parameter types still do, where
// the route takes any).
func readOnly(route string) bool {
	return strings.HasPrefix(route, "GET ") || strings.HasPrefix(route, "DELETE ")
}

// takesParams lists the GET routes with query parameters.
var takesParams = map[string]bool{
	"GET /api/v1/datasets":                         true,
	"GET /api/v1/datasets/{id}/traces":             true,
	"GET /api/v1/datasets/{id}/export":             true,
	"GET /api/v1/datasets/{id}/dashboard":          true,
	"GET /api/v1/datasets/{id}/totals":             true,
	"GET /api/v1/traces/{id}":                      true,
	"GET /api/v1/traces/{id}/download":             true,
	"GET /api/v1/traces/{id}/events":               true,
	"GET /api/v1/datasets/{id}/search":             true,
	"GET /api/v1/traces/{id}/hits":                 true,
	"GET /api/v1/traces/{id}/live":                 false,
	"GET /api/v1/datasets/{id}/metadata":           false,
	"GET /api/v1/traces/{id}/annotations":          false,
	"GET /api/v1/datasets/{id}":                    false,
	"DELETE /api/v1/datasets/{id}":                 false,
	"DELETE /api/v1/traces/{id}":                   false,
	"DELETE /api/v1/traces/{id}/annotations/{aid}": false,
}

// applies reports whether case kind applies to route.
func applies(route, kind string) bool {
	if na, ok := notApplicable[route]; ok {
		if _, ok := na[kind]; ok {
			return false
		}
	}
	switch kind {
	case kBadJSON, kTooLarge:
		return !readOnly(route)
	case kTypes:
		return !readOnly(route) || takesParams[route]
	}
	return true
}

// othersTest are route prefixes whose scenarios live with their own code
// (the policy endpoints, in the policy files' tests; the gateway, in its own).
var othersTest = []string{"/api/v1/policy", "/policies", "/check", "/api/v1/gateway/"}

const smallLimit = 64 << 10

// TestScenarios runs every endpoint through its cases — success, bad JSON
// (the message names the place), wrong types, missing auth, another user's
// private dataset, too-large body, unknown dataset — on every backend.
func TestScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		f.addUser("bob")
		ids := map[string]string{
			"ap":   f.createDataset("alice", "alice-private", false),
			"apub": f.createDataset("alice", "alice-public", true),
			"bp":   f.createDataset("bob", "bob-private", false),
		}
		ids["at"] = f.push("alice", `{"dataset": "alice-private", "messages": [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], [{"role": "user", "content": "second"}]], "metadata": [{"name": "first"}, null], "annotations": [[{"address": "messages.0.content:0-2", "content": "greeting"}], null]}`)[0]
		ids["atpub"] = f.push("alice", `{"dataset": "alice-public", "messages": [[{"role": "user", "content": "public"}]]}`)[0]
		ids["bt"] = f.push("bob", `{"dataset": "bob-private", "messages": [[{"role": "user", "content": "bob's"}]]}`)[0]
		var ann struct{ ID string }
		f.must(201, "POST", "/api/v1/traces/"+ids["at"]+"/annotations", "alice", `{"address": "messages.1", "content": "to edit", "source": "user"}`).json(t, &ann)
		ids["aann"] = ann.ID
		var key struct{ ID string }
		f.must(201, "POST", "/api/v1/keys", "alice", `{"name": "to revoke"}`).json(t, &key)
		ids["akey"] = key.ID
		unknown := "00000000-0000-4000-8000-000000000000"
		ids["unknown"] = unknown
		bigStr := strings.Repeat("x", smallLimit)
		big := `{"messages": [[{"role": "user", "content": "` + bigStr + `"}]]}`

		scenarios := []scenario{
			// push
			{name: "push: Invariant shape with a key", kind: kSuccess, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body:   `{"messages": [[{"role": "user", "content": "a"}]], "dataset": "pushed", "metadata": [{"k": 1}], "annotations": null}`,
				status: 200, want: []string{`"id":\["[^"]+"\]`, `"dataset":"pushed"`}},
			{name: "push: without a dataset", kind: kSuccess, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "content": "loose"}]]}`, status: 200, want: []string{`^\{"id":\["[^"]+"\]\}`}},
			{name: "push: bad JSON names line, column and path", kind: kBadJSON, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body:   "{\"messages\": [[{\"role\": \"user\",\n \"content\": }]]}",
				status: 400, want: []string{`"code":"invalid_json"`, `line 2, column 13 \(\$\.messages\[0\]\[0\]\.content\)`, `"details":\{"line":2,"col":13,"path":"\$\.messages\[0\]\[0\]\.content"\}`}},
			{name: "push: truncated body", kind: kBadJSON, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[`, status: 400, want: []string{`"invalid_json"`, `unexpected end of JSON input`}},
			{name: "push: messages of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": "hello"}`, status: 422, want: []string{`"code":"invalid"`, `\$\.messages`, `must be an array, not a string`}},
			{name: "push: event content of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "content": 5}]]}`, status: 422, want: []string{`\$\.messages\[0\]\[0\]\.content`}},
			{name: "push: dataset of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset": 7}`, status: 422, want: []string{`\$\.dataset`, `must be a string`}},
			{name: "push: metadata length differs", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[], []], "metadata": [{}]}`, status: 422, want: []string{`metadata has 1 entries but messages has 2`}},
			{name: "push: empty messages", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": []}`, status: 422, want: []string{`messages must not be empty`}},
			{name: "push: no messages", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "x"}`, status: 422, want: []string{`needs \\"messages\\"`}},
			{name: "push: unknown member", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset_id": "x"}`, status: 422, want: []string{`\$\.dataset_id`, `unknown member`}},
			{name: "push: annotation without address", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "annotations": [[{"content": "x"}]]}`, status: 422, want: []string{`\$\.annotations\[0\]\[0\]`, `address`}},
			{name: "push: a member given twice", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "a", "messages": [[]], "dataset": "b"}`, status: 422, want: []string{`member \\"dataset\\" is given twice`, `"line":1`}},
			// The rule at the door (jsonscan): inside events and metadata too.
			{name: "push: an event's member given twice", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "role": "assistant", "content": "x"}]]}`, status: 422,
				want: []string{`"code":"invalid"`, `member \\"role\\" is given twice`, `"path":"\$\.messages\[0\]\[0\]\.role"`}},
			{name: "push: a metadata member given twice", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "metadata": [{"a": {"b": 1, "b": 2}}]}`, status: 422, want: []string{`"path":"\$\.metadata\[0\]\.a\.b"`, `given twice`}},
			{name: "push: a number past a float64 in metadata", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "metadata": [{"x": 1e400}]}`, status: 422, want: []string{`"path":"\$\.metadata\[0\]\.x"`, `number 1e400 is out of the range of a 64-bit float`}},
			{name: "push: bytes that are not UTF-8", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: "{\"traces\": [{\"events\": [{\"role\": \"user\", \"content\": \"a\xffb\"}]}]}", status: 422,
				want: []string{`"path":"\$\.traces\[0\]\.events\[0\]\.content"`, `invalid UTF-8 \(byte 0xff\)`}},
			{name: "push: half a surrogate pair in an extra member", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"traces": [{"events": [{"role": "user", "tool": {"x": "\ud800"}}]}]}`, status: 422, want: []string{`"path":"\$\.traces\[0\]\.events\[0\]\.tool\.x"`, `surrogate`}},
			{name: "push: nesting deeper than evaluation reads", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "metadata": [` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000) + `]}`, status: 422,
				want: []string{`"code":"invalid"`, `nesting deeper than 10000 levels`, `steps\)\.\.\.`}},
			{name: "push: the refused pushes stored nothing", method: "GET", path: "/api/v1/datasets?name=never&mine=true", user: "alice",
				status: 200, want: []string{`^\{"datasets":\[\]\}`}},
			// Explicit indexes the dataset holds: fail (default), skip, append.
			{name: "push: traces with indexes", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "traces": [{"index": 0, "events": []}, {"index": 1, "events": []}]}`, status: 200, want: []string{`^\{"id":\["[^"]+","[^"]+"\],"dataset":"clash"\}`}},
			{name: "push: the same indexes again name the trace and the index", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "traces": [{"index": 7, "events": []}, {"index": 1, "events": []}]}`, status: 409,
				want: []string{`"code":"conflict"`, `trace 1 of this push \(\$\.traces\[1\]\) has index 1, which dataset \\"clash\\" already holds it; nothing was stored`, `"details":\{"index":1,"path":"\$\.traces\[1\]\.index","trace":1\}`}},
			{name: "push: an index twice in one push", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "traces": [{"index": 9, "events": []}, {"index": 9, "events": []}]}`, status: 409,
				want: []string{`trace 1 of this push \(\$\.traces\[1\]\) has index 9, which trace 0 of this push gives it too`}},
			{name: "push: on_conflict skip stores the others", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "on_conflict": "skip", "traces": [{"index": 0, "events": []}, {"index": 5, "events": []}]}`, status: 200,
				want: []string{`^\{"id":\[null,"[^"]+"\],"dataset":"clash","skipped":\[\{"trace":0,"index":0\}\]\}`}},
			{name: "push: on_conflict append gives new indexes after the last", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "on_conflict": "append", "traces": [{"index": 1, "events": []}, {"events": []}]}`, status: 200,
				want: []string{`^\{"id":\["[^"]+","[^"]+"\],"dataset":"clash","reindexed":\[\{"trace":0,"index":1,"new_index":6\}\]\}`}},
			{name: "push: the dataset after the conflicts", method: "GET", path: "/api/v1/datasets?name=clash&mine=true", user: "alice",
				status: 200, want: []string{`"trace_count":5`}},
			{name: "push: an unknown on_conflict", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "clash", "on_conflict": "replace", "traces": []}`, status: 422, want: []string{`on_conflict must be \\"fail\\", \\"skip\\" or \\"append\\", not \\"replace\\"`, `"path":"\$\.on_conflict"`}},
			{name: "push: missing auth", kind: kNoAuth, method: "POST", path: "/api/v1/push/trace", user: "",
				body: `{"messages": [[]]}`, status: 401, want: []string{`"code":"unauthorized"`}},
			{name: "push: wrong key", method: "POST", path: "/api/v1/push/trace", user: "bad",
				body: `{"messages": [[]]}`, status: 401, want: []string{`invalid or revoked API key`}},
			{name: "push: not a Bearer header", method: "POST", path: "/api/v1/push/trace", user: "",
				header: []string{"Authorization", "Basic YTpi"}, body: `{"messages": [[]]}`, status: 401, want: []string{`Bearer`}},
			{name: "push: too large (Content-Length)", kind: kTooLarge, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: big, status: 413, want: []string{`"code":"body_too_large"`, `64KiB`}},
			{name: "push: dataset name of another user is a new dataset of mine", kind: kPrivate, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset": "bob-private"}`, status: 200, want: []string{`"dataset":"bob-private"`}},
			{name: "push: cross-site browser request", method: "POST", path: "/api/v1/push/trace", user: "alice",
				header: []string{"Origin", "https://evil.example"}, body: `{"messages": [[]]}`, status: 403, want: []string{`cross-origin`}},

			// datasets
			{name: "push: an unknown dataset is created on first push", kind: kUnknown, method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "content": "new"}]], "dataset": "brand-new"}`, status: 200, want: []string{`"dataset":"brand-new"`}},
			{name: "push: the new dataset is there, private", method: "GET", path: "/api/v1/datasets?name=brand-new&mine=true", user: "alice",
				status: 200, want: []string{`"name":"brand-new","owner":"alice","public":false`, `"trace_count":1`}},
			{name: "datasets: create", kind: kSuccess, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "made", "public": false, "metadata": {"a": 1}}`, status: 201, want: []string{`"name":"made"`, `"owner":"alice"`, `"metadata":\{"a":1\}`, `"trace_count":0`}},
			{name: "datasets: create a taken name", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "made"}`, status: 409, want: []string{`"code":"conflict"`, `made`}},
			{name: "datasets: create with bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "x",}`, status: 400, want: []string{`line 1, column 14`, `invalid JSON`}},
			{name: "datasets: create with a number for a name", kind: kTypes, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": 5}`, status: 422, want: []string{`\$\.name`, `must be a string, not a number`}},
			{name: "datasets: create with an empty name", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": " "}`, status: 422, want: []string{`must not be empty`}},
			{name: "datasets: create with metadata not an object", kind: kTypes, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "m", "metadata": [1]}`, status: 422, want: []string{`\$\.metadata`}},
			{name: "datasets: create without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets", user: "",
				body: `{"name": "x"}`, status: 401},
			{name: "datasets: create too large", kind: kTooLarge, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "` + strings.Repeat("n", smallLimit) + `"}`, status: 413},
			{name: "datasets: a body that is not an object", kind: kTypes, method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `[]`, status: 422, want: []string{`must be an object, not an array`}},
			{name: "datasets: list mine and public", kind: kSuccess, method: "GET", path: "/api/v1/datasets", user: "bob",
				status: 200, want: []string{`"name":"alice-public"`, `"name":"bob-private"`}},
			{name: "datasets: list anonymously shows public only", kind: kNoAuth, method: "GET", path: "/api/v1/datasets", user: "",
				status: 200, want: []string{`^\{"datasets":\[\{[^\]]*"name":"alice-public"[^\]]*\]\}\n$`}},
			{name: "datasets: filter by name", kind: kSuccess, method: "GET", path: "/api/v1/datasets?name=alice-private&mine=true", user: "alice",
				status: 200, want: []string{`"id":"{ap}"`}},
			{name: "datasets: list with mine of the wrong type", kind: kTypes, method: "GET", path: "/api/v1/datasets?mine=maybe", user: "alice",
				status: 400, want: []string{`mine must be true or false`}},
			{name: "datasets: list leaves out another user's private datasets", kind: kPrivate, method: "GET", path: "/api/v1/datasets", user: "bob",
				status: 200, want: []string{`"name":"alice-public"`}, absent: []string{`"name":"alice-private"`, `"id":"{ap}"`}},
			{name: "datasets: get mine", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 200, want: []string{`"id":"{ap}"`, `"trace_count":2`, `"public":false`, `"last_pushed":"`}},
			{name: "datasets: get another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 404, want: []string{`"code":"not_found"`}},
			{name: "datasets: get a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}", user: "",
				status: 404},
			{name: "datasets: get another user's public dataset", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{apub}", user: "bob",
				status: 200, want: []string{`"owner":"alice"`}},
			{name: "datasets: get an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}", user: "alice",
				status: 404},
			{name: "datasets: get a malformed id", kind: kUnknown, method: "GET", path: "/api/v1/datasets/not-an-id", user: "alice",
				status: 404},
			{name: "datasets: share", kind: kSuccess, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"public": true}`, status: 200, want: []string{`"id":"{ap}"`, `"public":true`}},
			{name: "datasets: shared is listed for others", method: "GET", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 200, want: []string{`"public":true`}},
			{name: "datasets: unshare", method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"public": false}`, status: 200, want: []string{`"public":false`}},
			{name: "datasets: unshared is private again", method: "GET", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 404},
			{name: "datasets: patch bad JSON", kind: kBadJSON, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"public": }`, status: 400},
			{name: "datasets: patch public of the wrong type", kind: kTypes, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"public": "yes"}`, status: 422, want: []string{`public`}},
			{name: "datasets: patch an unknown member", method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"name": "renamed"}`, status: 422, want: []string{`unknown member .*known: public`}},
			{name: "datasets: patch nothing", method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{}`, status: 422, want: []string{`nothing to change`}},
			{name: "datasets: patch without auth", kind: kNoAuth, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "",
				body: `{"public": true}`, status: 401},
			{name: "datasets: patch another user's private dataset", kind: kPrivate, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "bob",
				body: `{"public": true}`, status: 404},
			{name: "datasets: patch another user's public dataset", method: "PATCH", path: "/api/v1/datasets/{apub}", user: "bob",
				body: `{"public": false}`, status: 403},
			{name: "datasets: patch too large", kind: kTooLarge, method: "PATCH", path: "/api/v1/datasets/{ap}", user: "alice",
				body: `{"public": "` + bigStr + `"}`, status: 413},
			{name: "datasets: patch an unknown dataset", kind: kUnknown, method: "PATCH", path: "/api/v1/datasets/{unknown}", user: "alice",
				body: `{"public": true}`, status: 404},
			{name: "datasets: delete another user's private dataset", kind: kPrivate, method: "DELETE", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 404},
			{name: "datasets: delete another user's public dataset", method: "DELETE", path: "/api/v1/datasets/{apub}", user: "bob",
				status: 403, want: []string{`"code":"forbidden"`}},
			{name: "datasets: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/datasets/{ap}", user: "",
				status: 401},
			{name: "datasets: delete an unknown dataset", kind: kUnknown, method: "DELETE", path: "/api/v1/datasets/{unknown}", user: "alice",
				status: 404},

			// metadata
			{name: "metadata: put merges", kind: kSuccess, method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `{"a": 1, "b": {"c": 2}}`, status: 200, want: []string{`"a":1`, `"b":\{"c":2\}`}},
			{name: "metadata: put merges top-level keys", kind: kSuccess, method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=merge", user: "alice",
				body: `{"b": 3}`, status: 200, want: []string{`"a":1`, `"b":3`}},
			{name: "metadata: get", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				status: 200, want: []string{`"a":1`, `"b":3`}},
			{name: "metadata: put replaces", kind: kSuccess, method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=replace", user: "alice",
				body: `{"only": true}`, status: 200, want: []string{`^\{"only":true\}\n$`}},
			{name: "metadata: bad mode", method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=append", user: "alice",
				body: `{}`, status: 400, want: []string{`mode must be merge or replace`}},
			{name: "metadata: bad JSON", kind: kBadJSON, method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `{"a": tru}`, status: 400, want: []string{`\$\.a`}},
			{name: "metadata: not an object", kind: kTypes, method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `[1, 2]`, status: 422, want: []string{`metadata must be an object, not an array`}},
			{name: "metadata: another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "bob",
				status: 404},
			{name: "metadata: put without auth", kind: kNoAuth, method: "PUT", path: "/api/v1/datasets/{apub}/metadata", user: "",
				body: `{}`, status: 401},
			{name: "metadata: put on another user's public dataset", method: "PUT", path: "/api/v1/datasets/{apub}/metadata", user: "bob",
				body: `{}`, status: 403},
			{name: "metadata: unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/metadata", user: "alice",
				status: 404},

			// upload
			{name: "metadata: get a private dataset's anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "",
				status: 404},
			{name: "metadata: put on another user's private dataset", kind: kPrivate, method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "bob",
				body: `{"x": 1}`, status: 404},
			{name: "metadata: put too large", kind: kTooLarge, method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `{"a": "` + bigStr + `"}`, status: 413},
			{name: "metadata: put on an unknown dataset", kind: kUnknown, method: "PUT", path: "/api/v1/datasets/{unknown}/metadata", user: "alice",
				body: `{}`, status: 404},
			{name: "metadata: the refused puts changed nothing", method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				status: 200, want: []string{`^\{"only":true\}\n$`}},
			{name: "upload: Invariant JSONL, raw body", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=a.jsonl", user: "alice",
				body:   "{\"metadata\": {\"from\": \"upload\"}}\n[{\"role\": \"user\", \"content\": \"u1\"}]\n[{\"role\": \"user\", \"content\": \"u2\"}]\n",
				status: 201, want: []string{`"stored":2`, `"skipped":\[\]`, `"from":"upload"`}},
			{name: "upload: all-or-nothing rejects and lists every error", kind: kTypes, method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=bad.jsonl", user: "alice",
				body:   "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\", \"content\": 5}]\n[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": 1}]\n",
				status: 422, want: []string{`nothing stored`, `2 error\(s\)`, `"file":"bad.jsonl","line":2`, `"line":4`, `"path":"\$\[0\]\.content"`}},
			{name: "upload: nothing of the rejected upload was stored", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 200, want: []string{`"trace_count":4`}},
			{name: "upload: skip-invalid stores the valid traces", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=bad.jsonl&mode=skip-invalid", user: "alice",
				body:   "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\", \"content\": 5}]\n[{\"role\": \"user\", \"content\": \"ok\"}]\n",
				status: 201, want: []string{`"stored":2`, `"skipped":\[\{"file":"bad.jsonl","line":2`}},
			{name: "upload: the rule at the door, with file, line and path", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=dup.jsonl", user: "alice",
				body:   "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\", \"role\": \"assistant\"}]\n[{\"role\": \"user\", \"n\": -1e309}]\n",
				status: 422, want: []string{`2 error\(s\)`, `"file":"dup.jsonl","line":2,"col":\d+,"path":"\$\[0\]\.role","trace":1,"message":"member \\"role\\" is given twice"`, `"line":3,"col":\d+,"path":"\$\[0\]\.n","trace":2,"message":"number -1e309 is out of the range of a 64-bit float"`}},
			{name: "upload: an index the dataset holds names its line", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=x.jsonl", user: "alice",
				body:   "{\"messages\": [], \"index\": 100}\n{\"messages\": [], \"index\": 0}\n",
				status: 409, want: []string{`"code":"conflict"`, `x\.jsonl:2:1: index 0 is taken: dataset \\"alice-private\\" already holds it; nothing was stored`, `"line":2`}},
			{name: "upload: on_conflict=skip lists it with its line", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=x.jsonl&on_conflict=skip", user: "alice",
				body:   "{\"messages\": [], \"index\": 100}\n{\"messages\": [], \"index\": 0}\n",
				status: 201, want: []string{`"stored":1`, `"skipped":\[\{"file":"x.jsonl","line":2,"col":1,"path":"\$\.index","message":"index 0 is taken`}},
			{name: "upload: on_conflict=append gives new indexes", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=x.jsonl&on_conflict=append", user: "alice",
				body:   "{\"messages\": [], \"index\": 100}\n{\"messages\": [], \"index\": 0}\n",
				status: 201, want: []string{`"stored":2`, `"reindexed":\[\{"file":"x.jsonl","line":1,"col":1,"index":100,"new_index":101\},\{"file":"x.jsonl","line":2,"col":1,"index":0,"new_index":102\}\]`}},
			{name: "upload: unsupported format", method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "alice",
				body: `{"0123456789abcdef": {"input": {"success": false}}}`, status: 422, want: []string{`unsupported format langfuse-chatml`}},
			{name: "upload: bad mode", method: "POST", path: "/api/v1/datasets/{ap}/upload?mode=some", user: "alice",
				body: `[]`, status: 400},
			{name: "upload: bad format", method: "POST", path: "/api/v1/datasets/{ap}/upload?format=yaml", user: "alice",
				body: `[]`, status: 400, want: []string{`unknown format`}},
			{name: "upload: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "",
				body: `[]`, status: 401},
			{name: "upload: another user's private dataset", kind: kPrivate, method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "bob",
				body: `[]`, status: 404},
			{name: "upload: unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/datasets/{unknown}/upload", user: "alice",
				body: `[]`, status: 404},
			{name: "upload: too large", kind: kTooLarge, method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "alice",
				body: big, status: 413},

			// traces
			{name: "upload: bad JSON names the line and column", kind: kBadJSON, method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=broken.jsonl", user: "alice",
				body: "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\" \"content\": \"x\"}]\n", status: 422, want: []string{`nothing stored`, `"file":"broken.jsonl","line":2,"col":\d+`, `broken.jsonl:2:\d+: `}},
			{name: "upload: nothing of the broken file was stored", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 200, want: []string{`"trace_count":9`}},
			{name: "traces: list", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/traces", user: "alice",
				status: 200, want: []string{`"id":"{at}","index":0,"name":"first","metadata":\{"name":"first"\},"event_count":2,"annotation_count":2`, `"next":""`}},
			{name: "traces: list a page", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/traces?limit=1", user: "alice",
				status: 200, want: []string{`^\{"traces":\[\{"id":"{at}"[^\]]*\],"next":"[^"]+"\}`}},
			{name: "traces: bad limit", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/traces?limit=0", user: "alice",
				status: 400, want: []string{`limit must be`}},
			{name: "traces: bad cursor", method: "GET", path: "/api/v1/datasets/{ap}/traces?cursor=%7B%7D", user: "alice",
				status: 400, want: []string{`cursor`}},
			{name: "traces: list another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/traces", user: "bob",
				status: 404},
			{name: "traces: list a public dataset anonymously", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{apub}/traces", user: "",
				status: 200, want: []string{`"id":"{atpub}"`}},
			{name: "traces: list an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/traces", user: "alice",
				status: 404},
			{name: "traces: list a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/traces", user: "",
				status: 404},
			{name: "dashboard", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/dashboard", user: "alice",
				status: 200, want: []string{`"totals":\{"start":"[^"]+","traces":9,`, `"policies":\[`, `"tools":\[`}},
			{name: "dashboard: a bad time", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/dashboard?from=yesterday", user: "alice",
				status: 400, want: []string{`from must be an RFC 3339 time`}},
			{name: "dashboard: another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/dashboard", user: "bob",
				status: 404},
			{name: "dashboard: a public dataset anonymously", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{apub}/dashboard", user: "",
				status: 200, want: []string{`"traces":1,`}},
			{name: "dashboard: an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/dashboard", user: "alice",
				status: 404},
			{name: "dashboard: a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/dashboard", user: "",
				status: 404},
			{name: "totals", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/totals", user: "alice",
				status: 200, want: []string{`"traces":9,"input_tokens":0,"output_tokens":0,"cost":0`}},
			{name: "totals: a bad time", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/totals?to=2026-13-01", user: "alice",
				status: 400, want: []string{`to must be an RFC 3339 time`}},
			{name: "totals: another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/totals", user: "bob",
				status: 404},
			{name: "totals: an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/totals", user: "alice",
				status: 404},
			{name: "totals: a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/totals", user: "",
				status: 404},
			{name: "search: a word, with its hits", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/search?q=HELLO", user: "alice",
				status: 200, want: []string{`"id":"{at}","index":0,"name":"first"`, `"hits":\["messages.1.content:0-5"\]`, `"total":1,"total_is_estimate":false`, `"plan":"\\"hello\\""`}},
			{name: "search: a filter and a negation", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/search?q=role:user+-hello", user: "alice",
				status: 200, absent: []string{`"id":"{at}"`}, want: []string{`"plan":"\(and role:\\"user\\" \(not \\"hello\\"\)\)"`}},
			{name: "search: a query that does not parse gives its column", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/search?q=hello+OR", user: "alice",
				status: 400, want: []string{`"code":"invalid_query"`, `column 9: OR needs a term after it`, `"details":\{"column":9,"position":8\}`}},
			{name: "search: a policy the dataset has not saved", method: "GET", path: "/api/v1/datasets/{ap}/search?q=policy:%22nope%22", user: "alice",
				status: 400, want: []string{`no saved policy named \\"nope\\"`, `"position":0`}},
			{name: "search: bad limit", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/search?q=x&limit=5000", user: "alice",
				status: 400, want: []string{`limit must be`}},
			{name: "search: another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/search?q=hello", user: "bob",
				status: 404},
			{name: "search: a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/search?q=hello", user: "",
				status: 404},
			{name: "search: an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/search?q=hello", user: "alice",
				status: 404},
			{name: "hits: where the words are in one trace", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}/hits?q=h+-x", user: "alice",
				status: 200, want: []string{`^\{"hits":\["messages.0.content:0-1","messages.1.content:0-1"\]\}`}},
			{name: "hits: a bad query", kind: kTypes, method: "GET", path: "/api/v1/traces/{at}/hits?q=(", user: "alice",
				status: 400, want: []string{`never closed`}},
			{name: "hits: another user's private trace", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/hits?q=h", user: "bob",
				status: 404},
			{name: "hits: a private trace anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/hits?q=h", user: "",
				status: 404},
			{name: "hits: an unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/hits?q=h", user: "alice",
				status: 404},
			{name: "export: Invariant JSONL with the dataset metadata first", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/export", user: "alice",
				status: 200, want: []string{`^\{"metadata":\{"only":true,"from":"upload"\}\}\n\{"messages":\[\{"role":"user","content":"hi"\},\{"role":"assistant","content":"hello"\}\],"metadata":\{"name":"first"\},"annotations":\[`}},
			{name: "export: format of the wrong type", kind: kTypes, method: "GET", path: "/api/v1/datasets/{ap}/export?format=csv", user: "alice",
				status: 400, want: []string{`format must be invariant or canonical`}},
			{name: "export: a private dataset anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/export", user: "",
				status: 404},
			{name: "export: another user's private dataset", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/export", user: "bob",
				status: 404},
			{name: "export: an unknown dataset", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/export", user: "alice",
				status: 404},
			{name: "export: a public dataset anonymously", method: "GET", path: "/api/v1/datasets/{apub}/export", user: "",
				status: 200, want: []string{`"content":"public"`}},
			{name: "traces: get canonical", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 200, want: []string{`^\{"id":"{at}","name":"first","index":0,"metadata":\{"name":"first"\},"events":\[\{"role":"user","content":"hi"\},\{"role":"assistant","content":"hello"\}\],"annotations":\[\{"address":"messages.0.content:0-2","content":"greeting"\},\{"address":"messages.1","content":"to edit"\}\]\}\n$`}},
			{name: "events: first page", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}/events?limit=1", user: "alice",
				status: 200, want: []string{`^\{"id":"{at}","name":"first","index":0,"total":2,"offset":0,"events":\[\{"role":"user","content":"hi"\}\]\}\n$`}},
			{name: "events: from an offset", method: "GET", path: "/api/v1/traces/{at}/events?offset=1", user: "alice",
				status: 200, want: []string{`"total":2,"offset":1,"events":\[\{"role":"assistant","content":"hello"\}\]\}`}},
			{name: "events: past the end", method: "GET", path: "/api/v1/traces/{at}/events?offset=7&limit=5", user: "alice",
				status: 200, want: []string{`"total":2,"offset":7,"events":\[\]\}`}},
			{name: "events: a limit out of range", kind: kTypes, method: "GET", path: "/api/v1/traces/{at}/events?limit=0", user: "alice",
				status: 400, want: []string{`limit must be a whole number from 1 to 5000`}},
			{name: "events: a negative offset", method: "GET", path: "/api/v1/traces/{at}/events?offset=-1", user: "alice",
				status: 400, want: []string{`offset must be`}},
			{name: "events: another user's private trace", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/events", user: "bob",
				status: 404},
			{name: "events: a private trace anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/events", user: "",
				status: 404},
			{name: "events: a public trace anonymously", method: "GET", path: "/api/v1/traces/{atpub}/events", user: "",
				status: 200, want: []string{`"offset":0,"events":\[\{`}},
			{name: "events: an unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/events", user: "alice",
				status: 404},
			{name: "live: another user's private trace", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/live", user: "bob",
				status: 404},
			{name: "live: a private trace anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/live", user: "",
				status: 404},
			{name: "live: an unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/live", user: "alice",
				status: 404},
			{name: "traces: get invariant", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}?format=invariant", user: "alice",
				status: 200, want: []string{`^\{"messages":\[\{"role":"user","content":"hi"\},\{"role":"assistant","content":"hello"\}\],"metadata":\{"name":"first"\},"annotations":\[`}},
			{name: "traces: bad format", kind: kTypes, method: "GET", path: "/api/v1/traces/{at}?format=xml", user: "alice",
				status: 400},
			{name: "traces: download", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}/download", user: "alice",
				status: 200, want: []string{`"events"`}},
			{name: "traces: get another user's private trace", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}", user: "bob",
				status: 404},
			{name: "traces: get a private trace anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}", user: "",
				status: 404},
			{name: "traces: get a public trace anonymously", kind: kSuccess, method: "GET", path: "/api/v1/traces/{atpub}", user: "",
				status: 200},
			{name: "traces: get an unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}", user: "alice",
				status: 404},
			{name: "traces: download in an unknown format", kind: kTypes, method: "GET", path: "/api/v1/traces/{at}/download?format=xml", user: "alice",
				status: 400},
			{name: "traces: download a private trace anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/download", user: "",
				status: 404},
			{name: "traces: download another user's private trace", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/download", user: "bob",
				status: 404},
			{name: "traces: download an unknown trace", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/download", user: "alice",
				status: 404},
			{name: "traces: append events", kind: kSuccess, method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user", "content": "more"}]`, status: 200, want: []string{`"appended":1`}},
			{name: "traces: append events as an object", kind: kSuccess, method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `{"events": [{"role": "assistant", "content": "and more"}]}`, status: 200},
			{name: "traces: appended events are there", method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 200, want: []string{`"content":"hello"\},\{"role":"user","content":"more"\},\{"role":"assistant","content":"and more"\}\]`}},
			{name: "traces: append bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user" "content": "x"}]`, status: 400, want: []string{`\$\[0\]`, `column 18`}},
			{name: "traces: append events of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user", "tool_calls": {}}]`, status: 422, want: []string{`\$\[0\]\.tool_calls`}},
			{name: "traces: append nothing", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[]`, status: 422},
			{name: "traces: append without auth", kind: kNoAuth, method: "POST", path: "/api/v1/traces/{at}/events", user: "",
				body: `[]`, status: 401},
			{name: "traces: append to another user's trace", kind: kPrivate, method: "POST", path: "/api/v1/traces/{at}/events", user: "bob",
				body: `[{"role": "user"}]`, status: 404},
			{name: "traces: append to another user's public trace", method: "POST", path: "/api/v1/traces/{atpub}/events", user: "bob",
				body: `[{"role": "user"}]`, status: 403},
			{name: "traces: append too large", kind: kTooLarge, method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: big, status: 413},

			// annotations
			{name: "traces: append to an unknown trace", kind: kUnknown, method: "POST", path: "/api/v1/traces/{unknown}/events", user: "alice",
				body: `[{"role": "user"}]`, status: 404},
			{name: "annotations: list", kind: kSuccess, method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`"address":"messages.0.content:0-2","content":"greeting","source":"user","author":"alice"`}},
			{name: "annotations: list a private trace's anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/traces/{at}/annotations", user: "",
				status: 404},
			{name: "annotations: list another user's private trace's", kind: kPrivate, method: "GET", path: "/api/v1/traces/{at}/annotations", user: "bob",
				status: 404},
			{name: "annotations: list an unknown trace's", kind: kUnknown, method: "GET", path: "/api/v1/traces/{unknown}/annotations", user: "alice",
				status: 404},
			{name: "annotations: create", kind: kSuccess, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "note", "source": "analyzer", "extra": {"severity": 2}}`, status: 201,
				want: []string{`"source":"analyzer"`, `"extra":\{"severity":2\}`, `"trace_id":"{at}"`}},
			{name: "annotations: create bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "note"`, status: 400},
			{name: "annotations: create with a number for content", kind: kTypes, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": 3}`, status: 422, want: []string{`\$\.content`}},
			{name: "annotations: create without an address", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"content": "x"}`, status: 422, want: []string{`address`}},
			{name: "annotations: create at an address that does not parse", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "garbage!!", "content": "x"}`, status: 422, want: []string{`"code":"invalid"`, `garbage!!`}},
			{name: "annotations: create at a path-like address", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "../../etc", "content": "x"}`, status: 422, want: []string{`"code":"invalid"`}},
			{name: "annotations: create at an event the trace lacks", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.99.content", "content": "x"}`, status: 422, want: []string{`not in the trace`}},
			{name: "annotations: create at an inverted range", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0.content:5-1", "content": "x"}`, status: 422, want: []string{`"code":"invalid"`}},
			{name: "annotations: replace with one address the trace lacks", method: "PUT", path: "/api/v1/traces/{at}/annotations?source=checker", user: "alice",
				body: `{"annotations": [{"address": "messages.0", "content": "ok"}, {"address": "messages.7", "content": "x"}]}`, status: 422, want: []string{`\$\.annotations\[1\]`, `not in the trace`}},
			{name: "annotations: create without auth", kind: kNoAuth, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "",
				body: `{"address": "messages.0", "content": "x"}`, status: 401},
			{name: "annotations: create on another user's private trace", kind: kPrivate, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "bob",
				body: `{"address": "messages.0", "content": "x"}`, status: 404},
			{name: "annotations: create on an unknown trace", kind: kUnknown, method: "POST", path: "/api/v1/traces/{unknown}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "x"}`, status: 404},
			{name: "annotations: create too large", kind: kTooLarge, method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "` + bigStr + `"}`, status: 413},
			{name: "annotations: update", kind: kSuccess, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content": "edited", "extra": {"k": "v"}}`, status: 200, want: []string{`"content":"edited"`, `"extra":\{"k":"v"\}`}},
			{name: "annotations: update with wrong types", kind: kTypes, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content": ["x"]}`, status: 422},
			{name: "annotations: update an unknown annotation", kind: kUnknown, method: "PUT", path: "/api/v1/traces/{at}/annotations/{unknown}", user: "alice",
				body: `{"content": "x"}`, status: 404},
			{name: "annotations: update on another user's trace", kind: kPrivate, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "bob",
				body: `{"content": "x"}`, status: 404},
			{name: "annotations: update with bad JSON", kind: kBadJSON, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content" "x"}`, status: 400, want: []string{`line 1, column 12`}},
			{name: "annotations: update without auth", kind: kNoAuth, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "",
				body: `{"content": "x"}`, status: 401},
			{name: "annotations: update too large", kind: kTooLarge, method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content": "` + bigStr + `"}`, status: 413},
			{name: "annotations: the refused updates changed nothing", method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`"content":"edited"`}},
			{name: "annotations: replace one source", kind: kSuccess, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": "messages.1", "content": "r1"}, {"address": "messages.2", "content": "r2"}]}`, status: 200,
				want: []string{`"content":"r1","source":"analyzer"`, `"content":"r2","source":"analyzer"`, `"content":"greeting","source":"user"`}},
			{name: "annotations: replace without a source", method: "PUT", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"annotations": []}`, status: 400},
			{name: "annotations: replace with wrong types", kind: kTypes, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": 1, "content": "x"}]}`, status: 422, want: []string{`\$\.annotations\[0\]\.address`}},
			{name: "annotations: replace with bad JSON", kind: kBadJSON, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": "messages.1", "content": "x"},]}`, status: 400, want: []string{`line 1, column \d+ \(\$\.annotations`}},
			{name: "annotations: replace without auth", kind: kNoAuth, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "",
				body: `{"annotations": []}`, status: 401},
			{name: "annotations: replace on another user's private trace", kind: kPrivate, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "bob",
				body: `{"annotations": []}`, status: 404},
			{name: "annotations: replace too large", kind: kTooLarge, method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": "messages.1", "content": "` + bigStr + `"}]}`, status: 413},
			{name: "annotations: replace on an unknown trace", kind: kUnknown, method: "PUT", path: "/api/v1/traces/{unknown}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": []}`, status: 404},
			{name: "annotations: the refused replacements changed nothing", method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`"content":"r1","source":"analyzer"`, `"content":"r2","source":"analyzer"`}},
			{name: "annotations: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "",
				status: 401},
			{name: "annotations: delete on another user's private trace", kind: kPrivate, method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "bob",
				status: 404},
			{name: "annotations: delete an unknown annotation", kind: kUnknown, method: "DELETE", path: "/api/v1/traces/{at}/annotations/{unknown}", user: "alice",
				status: 404},
			{name: "annotations: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				status: 204},
			{name: "annotations: delete again", method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				status: 404},
			{name: "annotations: list after the changes", method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`^\{"annotations":\[[^\]]*"content":"greeting"[^\]]*\]\}\n$`}},

			// the server's backlog
			{name: "backlog: without auth", kind: kNoAuth, method: "GET", path: "/api/v1/backlog", user: "",
				status: 401},
			{name: "backlog: what is queued and pending", kind: kSuccess, method: "GET", path: "/api/v1/backlog", user: "alice",
				status: 200, want: []string{`"search_index":\{"catch_up_seconds":[0-9.]+,"lag_seconds":[0-9.]+,"queued":[0-9]+\}`, `"spans":\{"pending_traces":[0-9]+\}`}},

			// keys and sessions
			{name: "keys: create", kind: kSuccess, method: "POST", path: "/api/v1/keys", user: "alice",
				body: `{"name": "scenario"}`, status: 201, want: []string{`"name":"scenario","key":"lk_[A-Za-z0-9_-]{43}","last4":"[A-Za-z0-9_-]{4}"`}},
			{name: "keys: create with no body", kind: kSuccess, method: "POST", path: "/api/v1/keys", user: "alice",
				status: 201, want: []string{`"name":"key"`}},
			{name: "keys: create with bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/keys", user: "alice",
				body: `{"name": }`, status: 400, want: []string{`line 1, column 10`}},
			{name: "keys: create too large", kind: kTooLarge, method: "POST", path: "/api/v1/keys", user: "alice",
				body: `{"name": "` + bigStr + `"}`, status: 413},
			{name: "keys: list without auth", kind: kNoAuth, method: "GET", path: "/api/v1/keys", user: "",
				status: 401},
			{name: "keys: list never shows a key or its hash", method: "GET", path: "/api/v1/keys", user: "alice",
				status: 200, want: []string{`"last4":`}, absent: []string{`"key":`, `"hash"`, `lk_`}},
			{name: "keys: revoke without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/keys/{akey}", user: "",
				status: 401},
			{name: "keys: revoke an unknown key", kind: kUnknown, method: "DELETE", path: "/api/v1/keys/{unknown}", user: "alice",
				status: 404},
			{name: "keys: list shows the last four only", kind: kSuccess, method: "GET", path: "/api/v1/keys", user: "alice",
				status: 200, want: []string{`"name":"to revoke","last4":"[^"]{4}"`}},
			{name: "keys: create without auth", kind: kNoAuth, method: "POST", path: "/api/v1/keys", user: "",
				body: `{"name": "x"}`, status: 401},
			{name: "keys: create with a bad name", kind: kTypes, method: "POST", path: "/api/v1/keys", user: "alice",
				body: `{"name": false}`, status: 422},
			{name: "keys: revoke another user's key", kind: kPrivate, method: "DELETE", path: "/api/v1/keys/{akey}", user: "bob",
				status: 404},
			{name: "keys: revoke", kind: kSuccess, method: "DELETE", path: "/api/v1/keys/{akey}", user: "alice",
				status: 204},
			{name: "login: success", kind: kSuccess, method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": "alice-pw"}`, status: 200, want: []string{`^\{"user":\{"id":"[^"]+","name":"alice"\}\}`}},
			{name: "login: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice" "password": "x"}`, status: 400, want: []string{`line 1, column 18`}},
			{name: "login: too large", kind: kTooLarge, method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": "` + bigStr + `"}`, status: 413},
			{name: "logout: without a session", kind: kSuccess, method: "POST", path: "/api/v1/logout", user: "",
				status: 204},
			{name: "login: wrong password", method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": "nope"}`, status: 401, want: []string{`wrong user name or password`}},
			{name: "login: unknown user", method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "carol", "password": "x"}`, status: 401},
			{name: "login: wrong types", kind: kTypes, method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": 1}`, status: 422, want: []string{`\$\.password`}},
			{name: "me: anonymous", kind: kSuccess, method: "GET", path: "/api/v1/me", user: "",
				status: 200, want: []string{`"user":null`, `"local_mode":false`}},
			{name: "me: with a key", kind: kSuccess, method: "GET", path: "/api/v1/me", user: "bob",
				status: 200, want: []string{`"name":"bob"`, `"via":"key"`}},

			{name: "healthz", kind: kSuccess, method: "GET", path: "/healthz", user: "",
				status: 200, want: []string{`^\{"status":"ok"\}`}},
			{name: "readyz", kind: kSuccess, method: "GET", path: "/readyz", user: "",
				status: 200, want: []string{`^\{"status":"ready"\}`}},

			// routing
			{name: "unknown endpoint", method: "GET", path: "/api/v1/nothing", user: "alice",
				status: 404, want: []string{`"code":"not_found"`}},
			{name: "wrong method", method: "PATCH", path: "/api/v1/datasets", user: "alice",
				status: 405, want: []string{`"code":"method_not_allowed"`}},

			// deletes last
			{name: "traces: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/traces/{at}", user: "",
				status: 401},
			{name: "traces: delete an unknown trace", kind: kUnknown, method: "DELETE", path: "/api/v1/traces/{unknown}", user: "alice",
				status: 404},
			{name: "traces: delete another user's trace", kind: kPrivate, method: "DELETE", path: "/api/v1/traces/{at}", user: "bob",
				status: 404},
			{name: "traces: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/traces/{at}", user: "alice",
				status: 204},
			{name: "traces: deleted trace is gone", method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 404},
			{name: "datasets: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 204},
			{name: "datasets: deleted dataset is gone", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 404},
		}
		pairs := []string{}
		for k, v := range ids {
			pairs = append(pairs, "{"+k+"}", v)
		}
		expand := strings.NewReplacer(pairs...)
		checkCoverage(t, f.srv, scenarios, expand)
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				var body io.Reader
				if sc.body != "" {
					body = strings.NewReader(sc.body)
				}
				header := append([]string{"Content-Type", "application/json"}, sc.header...)
				r := f.do(sc.method, expand.Replace(sc.path), sc.user, body, header...)
				if r.status != sc.status {
					t.Fatalf("status %d, want %d\n%s", r.status, sc.status, r.body)
				}
				checkHeaders(t, r)
				for _, re := range sc.want {
					re = expand.Replace(re)
					if !regexp.MustCompile(re).Match(r.body) {
						t.Errorf("body does not match %s:\n%s", re, r.body)
					}
				}
				for _, re := range sc.absent {
					re = expand.Replace(re)
					if regexp.MustCompile(re).Match(r.body) {
						t.Errorf("body matches %s, which it must not:\n%s", re, r.body)
					}
				}
				checkKind(t, sc, r)
				if r.status >= 400 && !regexp.MustCompile(`^\{"error":\{"code":"[a-z_]+","message":"[^"]+`).Match(r.body) {
					t.Errorf("error body is not {\"error\": {\"code\", \"message\"}}: %s", r.body)
				}
			})
		}
		t.Run("revoked key is refused", func(t *testing.T) {
			// The revoked key was created through the API; make one more
			// and revoke it to see the key itself refused.
			var k struct{ ID, Key string }
			f.must(201, "POST", "/api/v1/keys", "alice", `{"name": "short-lived"}`).json(t, &k)
			f.keys["short"] = k.Key
			f.must(200, "GET", "/api/v1/me", "short", "")
			f.must(204, "DELETE", "/api/v1/keys/"+k.ID, "alice", "")
			r := f.must(401, "GET", "/api/v1/me", "short", "")
			if !strings.Contains(r.String(), "revoked") {
				t.Errorf("body %s", r)
			}
		})
		t.Run("too large chunked body", func(t *testing.T) {
			// No Content-Length: the limit bites while reading.
			for _, path := range []string{"/api/v1/push/trace", "/api/v1/datasets/" + ids["apub"] + "/upload"} {
				r := f.do("POST", path, "alice", io.MultiReader(strings.NewReader(big)), "Content-Type", "application/json")
				if r.status != 413 || !strings.Contains(r.String(), "body_too_large") {
					t.Errorf("%s: status %d: %s", path, r.status, r)
				}
			}
		})
		t.Run("multipart upload", func(t *testing.T) {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("comment", "ignored")
			fw, _ := mw.CreateFormFile("file", "multi.jsonl")
			fmt.Fprint(fw, "[{\"role\": \"user\", \"content\": \"m1\"}]\n{\"messages\": [{\"role\": \"user\", \"content\": 1}]}\n")
			mw.Close()
			r := f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 422 || !strings.Contains(r.String(), `"file":"multi.jsonl","line":2`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
			buf.Reset()
			mw = multipart.NewWriter(&buf)
			fw, _ = mw.CreateFormFile("file", "multi.jsonl")
			fmt.Fprint(fw, "[{\"role\": \"user\", \"content\": \"m1\"}]\n")
			mw.Close()
			r = f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 201 || !strings.Contains(r.String(), `"stored":1`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
			buf.Reset()
			mw = multipart.NewWriter(&buf)
			mw.WriteField("other", "x")
			mw.Close()
			r = f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 400 || !strings.Contains(r.String(), `no \"file\" part`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
		})
		t.Run("upload with server-sent progress events", func(t *testing.T) {
			c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["alice"]))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var file strings.Builder
			for i := range 300 {
				fmt.Fprintf(&file, "[{\"role\": \"user\", \"content\": \"sse %d\"}]\n", i)
			}
			var events []client.UploadProgress
			res, err := c.Upload(ctx, ids["apub"], "sse.jsonl", strings.NewReader(file.String()), client.UploadOptions{Progress: func(p client.UploadProgress) { events = append(events, p) }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stored != 300 || len(events) < 2 || events[0].Stage != "reading" || events[len(events)-1].Stage != "storing" || events[len(events)-1].Traces != 300 {
				t.Fatalf("stored %d; events %+v", res.Stored, events)
			}
			_, err = c.Upload(ctx, ids["apub"], "sse-bad.jsonl", strings.NewReader(file.String()+"[{\"role\": 1}]\n"), client.UploadOptions{Progress: func(client.UploadProgress) {}})
			var ae *client.Error
			if !errors.As(err, &ae) || ae.Status != 422 || len(client.UploadErrors(err)) != 1 || client.UploadErrors(err)[0].Line != 301 {
				t.Fatalf("rejected upload with events: %v %+v", err, client.UploadErrors(err))
			}
		})
		t.Run("login session", func(t *testing.T) {
			r := f.must(200, "POST", "/api/v1/login", "", `{"name": "bob", "password": "bob-pw"}`)
			var cookie *http.Cookie
			for _, c := range (&http.Response{Header: r.header}).Cookies() {
				if c.Name == sessionCookie {
					cookie = c
				}
			}
			if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
				t.Fatalf("session cookie %+v; Set-Cookie %q", cookie, r.header.Values("Set-Cookie"))
			}
			withCookie := func(method, path, body string) response {
				var b io.Reader
				if body != "" {
					b = strings.NewReader(body)
				}
				return f.do(method, path, "", b, "Cookie", sessionCookie+"="+cookie.Value, "Content-Type", "application/json")
			}
			if r := withCookie("GET", "/api/v1/me", ""); !strings.Contains(r.String(), `"via":"session"`) {
				t.Fatalf("me with a session: %s", r)
			}
			if r := withCookie("POST", "/api/v1/datasets", `{"name": "via-session"}`); r.status != 201 {
				t.Fatalf("write with a session: %d %s", r.status, r)
			}
			if r := withCookie("POST", "/api/v1/logout", ""); r.status != 204 {
				t.Fatalf("logout: %d %s", r.status, r)
			}
			if r := withCookie("POST", "/api/v1/datasets", `{"name": "after-logout"}`); r.status != 401 {
				t.Fatalf("write after logout: %d %s", r.status, r)
			}
		})
	})
}

// checkCoverage fails unless every route the server registers (but those
// tested with their own code) has a scenario of every case that applies to
// it, and every scenario reaches a registered route.
func checkCoverage(t *testing.T, srv *Server, scenarios []scenario, expand *strings.Replacer) {
	t.Helper()
	covered := map[string]map[string][]string{} // route → kind → scenario names
	for _, sc := range scenarios {
		req := httptest.NewRequest(sc.method, expand.Replace(sc.path), nil)
		_, route := srv.mux.Handler(req)
		if sc.kind == "" {
			continue
		}
		if route == "" {
			t.Errorf("scenario %q (%s %s) reaches no route", sc.name, sc.method, sc.path)
			continue
		}
		if !slices.Contains(kinds, sc.kind) {
			t.Errorf("scenario %q has unknown kind %q", sc.name, sc.kind)
		}
		if !applies(route, sc.kind) {
			t.Errorf("scenario %q is a %q case, which notApplicable says %s does not have", sc.name, sc.kind, route)
		}
		if covered[route] == nil {
			covered[route] = map[string][]string{}
		}
		covered[route][sc.kind] = append(covered[route][sc.kind], sc.name)
	}
	if len(srv.patterns) < 25 {
		t.Fatalf("the server registers %d routes; the API has at least 25", len(srv.patterns))
	}
	for _, route := range srv.patterns {
		if slices.ContainsFunc(othersTest, func(p string) bool { return strings.Contains(route, p) }) {
			continue
		}
		for _, k := range kinds {
			if applies(route, k) && len(covered[route][k]) == 0 {
				t.Errorf("%s has no %q scenario", route, k)
			}
		}
	}
	for route := range notApplicable {
		if !slices.Contains(srv.patterns, route) {
			t.Errorf("notApplicable names %s, which the server does not register", route)
		}
	}
}

// checkKind checks what every scenario of a kind has in common.
func checkKind(t *testing.T, sc scenario, r response) {
	t.Helper()
	var e struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if r.status >= 400 {
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Errorf("error body is not {\"error\": {\"code\", \"message\", ...}}: %s", r.body)
		}
	}
	switch sc.kind {
	case kSuccess:
		if r.status/100 != 2 {
			t.Errorf("a success case answered %d", r.status)
		}
	case kBadJSON:
		// The message names the place: line and column, or the JSON path.
		if !regexp.MustCompile(`line \d+|"line":\d+|\$[.\[]`).Match(r.body) {
			t.Errorf("a bad JSON answer that does not name the place: %s", r.body)
		}
	case kTypes:
		if r.status != 400 && r.status != 422 {
			t.Errorf("a wrong-type case answered %d, want 400 or 422", r.status)
		}
	case kNoAuth:
		if r.status != 401 && r.status != 404 && r.status/100 != 2 {
			t.Errorf("a missing-auth case answered %d, want 401 (writes), 404 (private data) or 2xx (public data)", r.status)
		}
		if sc.user != "" {
			t.Errorf("a missing-auth case sent as %q", sc.user)
		}
	case kPrivate:
		// bob asks for alice's private data and gets 404, as if it did not
		// exist; but for a push, where a dataset name is the pusher's own.
		if sc.path == "/api/v1/push/trace" {
			break
		}
		if sc.method == "GET" && !strings.ContainsAny(sc.path, "{?") && len(sc.absent) > 0 {
			break // a list leaves it out (absent checks it)
		}
		if sc.user != "bob" || r.status != 404 {
			t.Errorf("another user's private data asked for by %q answered %d, want bob and 404", sc.user, r.status)
		}
	case kTooLarge:
		if r.status != 413 || e.Error.Code != "body_too_large" {
			t.Errorf("a too-large case answered %d %s", r.status, r.body)
		}
	case kUnknown:
		if sc.path == "/api/v1/push/trace" {
			break // the dataset is created on first push
		}
		// The unknown id is in the path, or in the body (already expanded).
		named := strings.Contains(sc.path, "{unknown}") || strings.Contains(sc.path, "not-an-id") || strings.Contains(sc.body, "00000000-0000-4000-8000-000000000000")
		if !named || r.status != 404 {
			t.Errorf("an unknown-item case answered %d for %s; want 404 for an unknown id", r.status, sc.path)
		}
	}
}

// checkHeaders checks the security headers every response carries.
func checkHeaders(t *testing.T, r response) {
	t.Helper()
	for h, want := range map[string]string{
		"X-Content-Type-Options":       "nosniff",
		"X-Frame-Options":              "DENY",
		"Referrer-Policy":              "no-referrer",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
		"Cache-Control":                "no-store",
	} {
		if got := r.header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	// A strict Content-Security-Policy: everything from this origin only,
	// no plugins, no framing, no inline or eval'd script, no wildcards.
	csp := r.header.Get("Content-Security-Policy")
	directives := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":     "'self'",
		"base-uri":        "'none'",
		"frame-ancestors": "'none'",
		"form-action":     "'self'",
		"object-src":      "'none'",
	} {
		if directives[name] != want {
			t.Errorf("Content-Security-Policy %q: %s is %q, want %q", csp, name, directives[name], want)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, "http:") {
		t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
	}
	if r.status != http.StatusNoContent && !strings.HasPrefix(r.header.Get("Content-Type"), "application/") {
		t.Errorf("Content-Type %q", r.header.Get("Content-Type"))
	}
}
