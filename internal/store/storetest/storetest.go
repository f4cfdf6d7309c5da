// Package storetest is the conformance suite every store backend passes: Run
// checks each method of store.Store against a fresh store, Crash checks that
// acknowledged writes survive SIGKILL, and the Bench functions measure ingest
// and reads.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Run runs the suite. open returns a fresh, empty store and arranges for it
// to be closed when the test ends.
func Run(t *testing.T, openTB func(tb testing.TB) store.Store) {
	open := func(t *testing.T) store.Store { return openTB(t) }
	groups := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) store.Store)
	}{
		{"Users", testUsers},
		{"FirstUserTakesOverLocal", testFirstUserTakesOverLocal},
		{"APIKeys", testAPIKeys},
		{"Sessions", testSessions},
		{"Datasets", testDatasets},
		{"DatasetListing", testDatasetListing},
		{"DatasetPublic", testDatasetPublic},
		{"DatasetMetadata", testDatasetMetadata},
		{"DeleteDatasetCascades", testDeleteDataset},
		{"CorpusRoundTrip", testCorpusRoundTrip},
		{"TraceFields", testTraceFields},
		{"IndexAssignment", testIndexes},
		{"IndexConflicts", testIndexConflicts},
		{"AddTracesErrors", testAddTracesErrors},
		{"Pagination", testPagination},
		{"AppendEvents", testAppendEvents},
		{"Digests", testDigests},
		{"ListSort", testListSort},
		{"Dashboard", testDashboard},
		{"DeleteTrace", testDeleteTrace},
		{"Annotations", testAnnotations},
		{"ReplaceAnnotations", testReplaceAnnotations},
		{"ReplaceAnnotationsOf", testReplaceAnnotationsOf},
		{"Policies", testPolicies},
		{"PolicyModes", testPolicyModes},
		{"CreatePolicy", testCreatePolicy},
		{"CreatePolicyRace", testCreatePolicyRace},
		{"Scores", testScores},
		{"CriteriaAndRuns", testCriteriaAndRuns},
		{"Benchmarks", testBenchmarks},
		{"NotFound", testNotFound},
		{"ContextCanceled", testCanceled},
		{"ConcurrentAddTraces", testConcurrentAdds},
		{"AddSpans", testAddSpans},
		{"AddSpansChangedMeanwhile", testAddSpansChangedMeanwhile},
		{"AcceptSpans", testAcceptSpans},
		{"BuildAfterRebuild", testBuildAfterRebuild},
		{"AcceptSpansConcurrently", testAcceptSpansConcurrently},
		{"PendingLater", testPendingLater},
		{"PendingSorted", testPendingSorted},
		{"BuiltSorted", testBuiltSorted},
		{"PendingMany", testPendingMany},
		{"SearchConformance", testSearchConformance},
		{"SearchConsistency", testSearchConsistency},
		{"SearchRightAfterWrite", testSearchRightAfterWrite},
		{"Conversations", testConversations},
		{"ConversationsConcurrently", testConversationsConcurrently},
		{"ConversationsBatch", testConversationsBatch},
		{"ConversationLong", testConversationLong},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, open)
		})
	}
}

// env is one fresh store with helpers that fail the test on error.
type env struct {
	t   *testing.T
	st  store.Store
	ctx context.Context
}

func newEnv(t *testing.T, open func(t *testing.T) store.Store) *env {
	t.Helper()
	return &env{t: t, st: open(t), ctx: context.Background()}
}

func (e *env) user(name string) store.User {
	e.t.Helper()
	u, err := e.st.CreateUser(e.ctx, name, "hash-of-"+name)
	if err != nil {
		e.t.Fatalf("CreateUser(%q): %v", name, err)
	}
	return u
}

func (e *env) dataset(owner store.User, name string, public bool) store.Dataset {
	e.t.Helper()
	d, err := e.st.CreateDataset(e.ctx, store.Dataset{OwnerID: owner.ID, Name: name, Public: public})
	if err != nil {
		e.t.Fatalf("CreateDataset(%q): %v", name, err)
	}
	return d
}

func (e *env) add(owner, datasetID string, nts ...store.NewTrace) []string {
	e.t.Helper()
	ids, err := e.st.AddTraces(e.ctx, owner, datasetID, nts)
	if err != nil {
		e.t.Fatalf("AddTraces: %v", err)
	}
	if len(ids) != len(nts) {
		e.t.Fatalf("AddTraces returned %d ids for %d traces", len(ids), len(nts))
	}
	return ids
}

func (e *env) get(id string) store.StoredTrace {
	e.t.Helper()
	st, err := e.st.Trace(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Trace(%s): %v", id, err)
	}
	return st
}

func (e *env) ds(id string) store.Dataset {
	e.t.Helper()
	d, err := e.st.Dataset(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Dataset(%s): %v", id, err)
	}
	return d
}

// listAll walks every page of a dataset's trace list.
func (e *env) listAll(datasetID string, limit int) []store.TraceSummary {
	e.t.Helper()
	var all []store.TraceSummary
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100000 {
			e.t.Fatal("ListTraces does not end")
		}
		items, next, err := e.st.ListTraces(e.ctx, datasetID, store.Page{Cursor: cursor, Limit: limit})
		if err != nil {
			e.t.Fatalf("ListTraces(cursor %q): %v", cursor, err)
		}
		if limit > 0 && len(items) > limit {
			e.t.Fatalf("ListTraces gave %d items for limit %d", len(items), limit)
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		if len(items) == 0 {
			e.t.Fatalf("ListTraces gave an empty page with a next cursor %q", next)
		}
		cursor = next
	}
}

// simple is a small trace: name, one user message per event, metadata.
func simple(name string, events int, index *int64) store.NewTrace {
	t := &trace.Trace{Name: name, Index: index, Metadata: json.RawMessage(`{"name":` + string(trace.AppendString(nil, name)) + `}`)}
	for i := range events {
		t.Events = append(t.Events, trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprintf("%s message %d", name, i))})
	}
	return store.NewTrace{Trace: t}
}

func idx(i int64) *int64 { return &i }

// wantErr checks that err wraps target (nil: no error).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case target != nil && !errors.Is(err, target):
		t.Errorf("%s: error %v, want one wrapping %q", what, err, target)
	case target != nil && !strings.Contains(err.Error(), target.Error()):
		t.Errorf("%s: error text %q does not say %q", what, err, target)
	}
}

// checkTime checks that a time the store gave is UTC and recent.
func checkTime(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.Location() != time.UTC {
		t.Errorf("%s: time %v is not in UTC", what, tm)
	}
	if d := time.Since(tm); d < -time.Minute || d > 10*time.Minute {
		t.Errorf("%s: time %v is not recent", what, tm)
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	sort.Strings(out)
	return out
}

const missingID = "00000000-0000-4000-8000-000000000000"

// ---- users, keys, sessions ----

// The first user takes over what local mode made (datasets, their traces,
// API keys); the second takes nothing.
func testFirstUserTakesOverLocal(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	local, err := e.st.LocalUser(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := e.dataset(local, "notes", false)
	ids := e.add(local.ID, d.ID, store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("hi")}}}})
	if _, err := e.st.CreateAPIKey(ctx, local.ID, "ci", "localhash", "wxyz"); err != nil {
		t.Fatal(err)
	}
	alice := e.user("alice")
	got, err := e.st.Dataset(ctx, d.ID)
	if err != nil || got.OwnerID != alice.ID {
		t.Errorf("the local dataset after the first user: owner %s (%v), want alice %s", got.OwnerID, err, alice.ID)
	}
	if _, err := e.st.DatasetByName(ctx, alice.ID, "notes"); err != nil {
		t.Errorf("alice's dataset by name: %v", err)
	}
	if st, err := e.st.Trace(ctx, ids[0]); err != nil || st.OwnerID != alice.ID {
		t.Errorf("the local trace: owner %s (%v), want alice", st.OwnerID, err)
	}
	if u, err := e.st.UserByAPIKey(ctx, "localhash"); err != nil || u.ID != alice.ID {
		t.Errorf("the local key is now %+v (%v), want alice's", u, err)
	}
	// Local mode again (a data directory moved back): the second user takes nothing.
	d2 := e.dataset(local, "later", false)
	bob := e.user("bob")
	if got, err := e.st.Dataset(ctx, d2.ID); err != nil || got.OwnerID != local.ID {
		t.Errorf("a second user took the local dataset: owner %s (%v), bob %s", got.OwnerID, err, bob.ID)
	}
}

func testUsers(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	if n, err := e.st.CountUsers(ctx); err != nil || n != 0 {
		t.Fatalf("CountUsers on a new store = %d, %v; want 0", n, err)
	}
	local, err := e.st.LocalUser(ctx)
	if err != nil {
		t.Fatalf("LocalUser: %v", err)
	}
	if local.Name != store.LocalUserName || local.ID == "" {
		t.Errorf("LocalUser = %+v", local)
	}
	checkTime(t, "local user", local.CreatedAt)
	again, err := e.st.LocalUser(ctx)
	if err != nil || again != local {
		t.Errorf("LocalUser a second time = %+v, %v; want %+v", again, err, local)
	}
	if n, _ := e.st.CountUsers(ctx); n != 0 {
		t.Errorf("CountUsers counts the local user: %d", n)
	}

	alice, err := e.st.CreateUser(ctx, "alice", "argon2-hash")
	if err != nil {
		t.Fatal(err)
	}
	if alice.Name != "alice" || alice.PasswordHash != "argon2-hash" || alice.ID == "" || alice.ID == local.ID {
		t.Errorf("CreateUser = %+v", alice)
	}
	checkTime(t, "user", alice.CreatedAt)
	e.user("bob")
	if n, err := e.st.CountUsers(ctx); err != nil || n != 2 {
		t.Errorf("CountUsers = %d, %v; want 2", n, err)
	}
	if u, err := e.st.UserByName(ctx, "alice"); err != nil || u != alice {
		t.Errorf("UserByName(alice) = %+v, %v; want %+v", u, err, alice)
	}
	if u, err := e.st.UserByID(ctx, alice.ID); err != nil || u != alice {
		t.Errorf("UserByID(alice) = %+v, %v; want %+v", u, err, alice)
	}
	if u, err := e.st.UserByName(ctx, store.LocalUserName); err != nil || u != local {
		t.Errorf("UserByName(local) = %+v, %v; want %+v", u, err, local)
	}
	// ListUsers (which `lookout key create` uses to find the first user)
	// lists everyone, the local user included, oldest first.
	ul, ok := e.st.(interface {
		ListUsers(ctx context.Context) ([]store.User, error)
	})
	if !ok {
		t.Fatalf("%T has no ListUsers", e.st)
	}
	if users, err := ul.ListUsers(ctx); err != nil || len(users) != 3 || users[0] != local || users[1] != alice || users[2].Name != "bob" {
		t.Errorf("ListUsers = %+v, %v; want local, alice, bob", users, err)
	}

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"taken name", func() error { _, err := e.st.CreateUser(ctx, "alice", "x"); return err }, store.ErrConflict},
		{"reserved local name", func() error { _, err := e.st.CreateUser(ctx, store.LocalUserName, "x"); return err }, store.ErrConflict},
		{"empty name", func() error { _, err := e.st.CreateUser(ctx, "", "x"); return err }, store.ErrInvalid},
		{"NUL in name", func() error { _, err := e.st.CreateUser(ctx, "a\x00b", "x"); return err }, store.ErrInvalid},
		{"invalid UTF-8 in name", func() error { _, err := e.st.CreateUser(ctx, "a\xffb", "x"); return err }, store.ErrInvalid},
		{"unknown name", func() error { _, err := e.st.UserByName(ctx, "carol"); return err }, store.ErrNotFound},
		{"unknown id", func() error { _, err := e.st.UserByID(ctx, missingID); return err }, store.ErrNotFound},
		{"malformed id", func() error { _, err := e.st.UserByID(ctx, "not-a-uuid"); return err }, store.ErrNotFound},
		{"names are case-sensitive", func() error { _, err := e.st.UserByName(ctx, "Alice"); return err }, store.ErrNotFound},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), c.want)
	}
}

func testAPIKeys(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice, bob := e.user("alice"), e.user("bob")
	k1, err := e.st.CreateAPIKey(ctx, alice.ID, "laptop", "hash1", "abcd")
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID == "" || k1.UserID != alice.ID || k1.Name != "laptop" || k1.Hash != "hash1" || k1.Last4 != "abcd" || k1.RevokedAt != nil || k1.LastUsed != nil {
		t.Errorf("CreateAPIKey = %+v", k1)
	}
	checkTime(t, "key", k1.CreatedAt)
	k2, err := e.st.CreateAPIKey(ctx, alice.ID, "ci", "hash2", "efgh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateAPIKey(ctx, bob.ID, "bob's", "hash3", "ijkl"); err != nil {
		t.Fatal(err)
	}
	keys, err := e.st.ListAPIKeys(ctx, alice.ID)
	if err != nil || len(keys) != 2 || keys[0] != k1 || keys[1] != k2 {
		t.Fatalf("ListAPIKeys(alice) = %+v, %v; want [%+v %+v]", keys, err, k1, k2)
	}

	u, err := e.st.UserByAPIKey(ctx, "hash1")
	if err != nil || u != alice {
		t.Errorf("UserByAPIKey(hash1) = %+v, %v; want alice", u, err)
	}
	keys, _ = e.st.ListAPIKeys(ctx, alice.ID)
	if keys[0].LastUsed == nil {
		t.Error("UserByAPIKey did not record the key's use")
	} else {
		checkTime(t, "key last used", *keys[0].LastUsed)
	}
	if keys[1].LastUsed != nil {
		t.Error("an unused key has a LastUsed time")
	}

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"taken hash", func() error { _, err := e.st.CreateAPIKey(ctx, bob.ID, "x", "hash1", "abcd"); return err }, store.ErrConflict},
		{"unknown user", func() error { _, err := e.st.CreateAPIKey(ctx, missingID, "x", "hash9", "abcd"); return err }, store.ErrNotFound},
		{"unknown hash", func() error { _, err := e.st.UserByAPIKey(ctx, "nope"); return err }, store.ErrNotFound},
		{"revoke another user's key", func() error { return e.st.RevokeAPIKey(ctx, bob.ID, k1.ID) }, store.ErrNotFound},
		{"revoke unknown key", func() error { return e.st.RevokeAPIKey(ctx, alice.ID, missingID) }, store.ErrNotFound},
		{"revoke malformed key id", func() error { return e.st.RevokeAPIKey(ctx, alice.ID, "k1") }, store.ErrNotFound},
		{"list keys of unknown user", func() error { _, err := e.st.ListAPIKeys(ctx, missingID); return err }, store.ErrNotFound},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), c.want)
	}
	if _, err := e.st.UserByAPIKey(ctx, "hash1"); err != nil {
		t.Fatalf("a failed revocation by another user revoked the key: %v", err)
	}

	if err := e.st.RevokeAPIKey(ctx, alice.ID, k1.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.st.UserByAPIKey(ctx, "hash1")
	wantErr(t, "revoked key", err, store.ErrNotFound)
	if u, err := e.st.UserByAPIKey(ctx, "hash2"); err != nil || u != alice {
		t.Errorf("revoking one key broke another: %+v, %v", u, err)
	}
	keys, _ = e.st.ListAPIKeys(ctx, alice.ID)
	if len(keys) != 2 || keys[0].RevokedAt == nil || keys[1].RevokedAt != nil {
		t.Fatalf("after revoking k1: %+v", keys)
	}
	first := *keys[0].RevokedAt
	checkTime(t, "revoked", first)
	time.Sleep(2 * time.Millisecond)
	if err := e.st.RevokeAPIKey(ctx, alice.ID, k1.ID); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	keys, _ = e.st.ListAPIKeys(ctx, alice.ID)
	if !keys[0].RevokedAt.Equal(first) {
		t.Errorf("revoking twice moved the revocation time from %v to %v", first, keys[0].RevokedAt)
	}
	if keys, _ := e.st.ListAPIKeys(ctx, bob.ID); len(keys) != 1 || keys[0].Hash != "hash3" {
		t.Errorf("ListAPIKeys(bob) = %+v", keys)
	}
}

func testSessions(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	if err := e.st.CreateSession(ctx, alice.ID, "live", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateSession(ctx, alice.ID, "expired", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if u, err := e.st.UserBySession(ctx, "live"); err != nil || u != alice {
		t.Errorf("UserBySession(live) = %+v, %v", u, err)
	}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"expired session", func() error { _, err := e.st.UserBySession(ctx, "expired"); return err }, store.ErrNotFound},
		{"unknown session", func() error { _, err := e.st.UserBySession(ctx, "nope"); return err }, store.ErrNotFound},
		{"taken token", func() error { return e.st.CreateSession(ctx, alice.ID, "live", time.Now().Add(time.Hour)) }, store.ErrConflict},
		{"unknown user", func() error { return e.st.CreateSession(ctx, missingID, "t2", time.Now().Add(time.Hour)) }, store.ErrNotFound},
		{"delete unknown", func() error { return e.st.DeleteSession(ctx, "nope") }, store.ErrNotFound},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), c.want)
	}
	if err := e.st.DeleteSession(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	_, err := e.st.UserBySession(ctx, "live")
	wantErr(t, "deleted session", err, store.ErrNotFound)
}

// ---- datasets ----

func testDatasets(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice, bob := e.user("alice"), e.user("bob")
	d, err := e.st.CreateDataset(ctx, store.Dataset{OwnerID: alice.ID, Name: "runs", Public: true, Metadata: json.RawMessage(`{"a": 1, "b": [true]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d.ID == "" || d.OwnerID != alice.ID || d.OwnerName != "alice" || d.Name != "runs" || !d.Public || string(d.Metadata) != `{"a":1,"b":[true]}` || d.LastPushed != nil || d.TraceCount != 0 {
		t.Errorf("CreateDataset = %+v (metadata %s)", d, d.Metadata)
	}
	checkTime(t, "dataset", d.CreatedAt)
	same := func(what string, got store.Dataset, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if got.ID != d.ID || got.OwnerName != d.OwnerName || got.Name != d.Name || got.Public != d.Public || string(got.Metadata) != string(d.Metadata) || !got.CreatedAt.Equal(d.CreatedAt) || got.TraceCount != 0 || got.LastPushed != nil {
			t.Errorf("%s = %+v, want %+v", what, got, d)
		}
	}
	got, err := e.st.Dataset(ctx, d.ID)
	same("Dataset", got, err)
	got, err = e.st.DatasetByName(ctx, alice.ID, "runs")
	same("DatasetByName", got, err)

	plain, err := e.st.CreateDataset(ctx, store.Dataset{OwnerID: alice.ID, Name: "plain"})
	if err != nil || string(plain.Metadata) != "{}" || plain.Public {
		t.Errorf("a dataset without metadata = %+v (metadata %s), %v; want private with {}", plain, plain.Metadata, err)
	}
	if _, err := e.st.CreateDataset(ctx, store.Dataset{OwnerID: bob.ID, Name: "runs"}); err != nil {
		t.Errorf("another owner cannot use the same name: %v", err)
	}
	cases := []struct {
		name string
		d    store.Dataset
		want error
	}{
		{"taken name", store.Dataset{OwnerID: alice.ID, Name: "runs"}, store.ErrConflict},
		{"empty name", store.Dataset{OwnerID: alice.ID, Name: ""}, store.ErrInvalid},
		{"unknown owner", store.Dataset{OwnerID: missingID, Name: "x"}, store.ErrNotFound},
		{"metadata not an object", store.Dataset{OwnerID: alice.ID, Name: "y", Metadata: json.RawMessage(`[1]`)}, store.ErrInvalid},
		{"metadata not JSON", store.Dataset{OwnerID: alice.ID, Name: "z", Metadata: json.RawMessage(`{"a":`)}, store.ErrInvalid},
	}
	for _, c := range cases {
		_, err := e.st.CreateDataset(ctx, c.d)
		wantErr(t, "CreateDataset: "+c.name, err, c.want)
	}
	_, err = e.st.DatasetByName(ctx, bob.ID, "plain")
	wantErr(t, "DatasetByName of another owner", err, store.ErrNotFound)
	_, err = e.st.Dataset(ctx, missingID)
	wantErr(t, "unknown dataset", err, store.ErrNotFound)
}

func testDatasetListing(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice, bob := e.user("alice"), e.user("bob")
	aPriv, aPub := e.dataset(alice, "a-private", false), e.dataset(alice, "a-public", true)
	bPriv, bPub := e.dataset(bob, "b-private", false), e.dataset(bob, "b-public", true)
	e.add(bob.ID, bPub.ID, simple("t", 1, nil), simple("u", 1, nil))
	name := func(d store.Dataset) string { return d.Name }
	cases := []struct {
		who  string
		user string
		want []store.Dataset
	}{
		{"alice", alice.ID, []store.Dataset{aPriv, aPub, bPub}},
		{"bob", bob.ID, []store.Dataset{aPub, bPriv, bPub}},
		{"anonymous", "", []store.Dataset{aPub, bPub}},
		{"unknown user", missingID, []store.Dataset{aPub, bPub}},
	}
	for _, c := range cases {
		got, err := e.st.ListDatasets(e.ctx, c.user)
		if err != nil {
			t.Errorf("ListDatasets(%s): %v", c.who, err)
			continue
		}
		if g, w := ids(got, name), ids(c.want, name); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("ListDatasets(%s) = %v, want %v", c.who, g, w)
		}
		for _, d := range got {
			if d.Name == "b-public" && (d.TraceCount != 2 || d.OwnerName != "bob" || d.LastPushed == nil) {
				t.Errorf("ListDatasets(%s): b-public = %+v, want 2 traces by bob, pushed", c.who, d)
			}
		}
	}
}

func testDatasetPublic(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice, bob := e.user("alice"), e.user("bob")
	d := e.dataset(alice, "shared-later", false)
	visible := func(who string) bool {
		ds, err := e.st.ListDatasets(e.ctx, who)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ds {
			if x.ID == d.ID {
				return true
			}
		}
		return false
	}
	if visible(bob.ID) || visible("") {
		t.Fatal("a private dataset is listed for others")
	}
	for _, public := range []bool{true, true, false} {
		if err := e.st.SetDatasetPublic(e.ctx, d.ID, public); err != nil {
			t.Fatalf("SetDatasetPublic(%v): %v", public, err)
		}
		if got := e.ds(d.ID).Public; got != public {
			t.Errorf("after SetDatasetPublic(%v) the dataset has public=%v", public, got)
		}
		if visible(bob.ID) != public || visible("") != public || !visible(alice.ID) {
			t.Errorf("public=%v: listed for bob %v, anonymous %v, alice %v", public, visible(bob.ID), visible(""), visible(alice.ID))
		}
	}
	wantErr(t, "unknown dataset", e.st.SetDatasetPublic(e.ctx, missingID, true), store.ErrNotFound)
	wantErr(t, "malformed id", e.st.SetDatasetPublic(e.ctx, "not-an-id", true), store.ErrNotFound)
}

func testDatasetMetadata(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d, err := e.st.CreateDataset(e.ctx, store.Dataset{OwnerID: alice.ID, Name: "m", Metadata: json.RawMessage(`{"a":1,"b":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		meta    string
		replace bool
		want    string // the metadata after the step
		err     error
	}{
		{"merge overwrites and adds", `{"b":3,"c":{"d":[1, 2]}}`, false, `{"a":1,"b":3,"c":{"d":[1,2]}}`, nil},
		{"merge keeps order", `{"a":"x"}`, false, `{"a":"x","b":3,"c":{"d":[1,2]}}`, nil},
		{"merge of nothing", `{}`, false, `{"a":"x","b":3,"c":{"d":[1,2]}}`, nil},
		{"merge null value", `{"b":null}`, false, `{"a":"x","b":null,"c":{"d":[1,2]}}`, nil},
		{"replace", `{"z": true}`, true, `{"z":true}`, nil},
		{"replace with empty", `{}`, true, `{}`, nil},
		{"merge into empty", `{"k":"v"}`, false, `{"k":"v"}`, nil},
		{"not an object", `[1,2]`, false, `{"k":"v"}`, store.ErrInvalid},
		{"not JSON", `{"k":`, true, `{"k":"v"}`, store.ErrInvalid},
		{"a string", `"x"`, true, `{"k":"v"}`, store.ErrInvalid},
	}
	for _, s := range steps {
		got, err := e.st.SetDatasetMetadata(e.ctx, d.ID, json.RawMessage(s.meta), s.replace)
		wantErr(t, s.name, err, s.err)
		if err == nil && string(got) != s.want {
			t.Errorf("%s: SetDatasetMetadata returned %s, want %s", s.name, got, s.want)
		}
		if stored := e.ds(d.ID).Metadata; string(stored) != s.want {
			t.Errorf("%s: stored metadata %s, want %s", s.name, stored, s.want)
		}
	}
	_, err = e.st.SetDatasetMetadata(e.ctx, missingID, json.RawMessage(`{}`), false)
	wantErr(t, "unknown dataset", err, store.ErrNotFound)
}

func testDeleteDataset(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	doomed, kept := e.dataset(alice, "doomed", false), e.dataset(alice, "kept", false)
	nt := simple("a", 2, nil)
	nt.Annotations = []store.Annotation{{Address: "messages[0]", Content: "note", Source: "user"}}
	gone := e.add(alice.ID, doomed.ID, nt, simple("b", 1, nil))
	stay := e.add(alice.ID, kept.ID, nt)
	pol, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: doomed.ID, Name: "p", Source: "raise 'x'"})
	if err != nil {
		t.Fatal(err)
	}
	keptPol, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: kept.ID, Name: "p", Source: "raise 'y'"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteDataset(ctx, doomed.ID); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		call func() error
	}{
		{"Dataset", func() error { _, err := e.st.Dataset(ctx, doomed.ID); return err }},
		{"DatasetByName", func() error { _, err := e.st.DatasetByName(ctx, alice.ID, "doomed"); return err }},
		{"Trace", func() error { _, err := e.st.Trace(ctx, gone[0]); return err }},
		{"Trace 2", func() error { _, err := e.st.Trace(ctx, gone[1]); return err }},
		{"ListAnnotations", func() error { _, err := e.st.ListAnnotations(ctx, gone[0]); return err }},
		{"ListTraces", func() error { _, _, err := e.st.ListTraces(ctx, doomed.ID, store.Page{}); return err }},
		{"Policy", func() error { _, err := e.st.Policy(ctx, pol.ID); return err }},
		{"ListPolicies", func() error { _, err := e.st.ListPolicies(ctx, doomed.ID); return err }},
		{"DeleteDataset again", func() error { return e.st.DeleteDataset(ctx, doomed.ID) }},
	}
	for _, c := range checks {
		wantErr(t, "after delete: "+c.name, c.call(), store.ErrNotFound)
	}
	if as, err := e.st.ListAnnotations(ctx, stay[0]); err != nil || len(as) != 1 {
		t.Errorf("the other dataset lost annotations: %v, %v", as, err)
	}
	if p, err := e.st.Policy(ctx, keptPol.ID); err != nil || p.Source != "raise 'y'" {
		t.Errorf("the other dataset lost its policy: %+v, %v", p, err)
	}
	if d := e.ds(kept.ID); d.TraceCount != 1 {
		t.Errorf("the other dataset has %d traces, want 1", d.TraceCount)
	}
	if _, err := e.st.CreateDataset(ctx, store.Dataset{OwnerID: alice.ID, Name: "doomed"}); err != nil {
		t.Errorf("the name of a deleted dataset cannot be used again: %v", err)
	}
}

// ---- traces ----

func testCorpusRoundTrip(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	total := 0
	for fi, f := range Corpus(t) {
		d := e.dataset(alice, fmt.Sprintf("corpus-%d", fi), false)
		batch := make([]store.NewTrace, len(f.Traces))
		given := false
		for i, tr := range f.Traces {
			batch[i] = NewTraceOf(tr, alice.Name)
			batch[i].Hierarchy = []string{"corpus", f.Path}
			given = given || tr.Index != nil
		}
		ids, err := e.st.AddTraces(ctx, alice.ID, d.ID, batch)
		if err != nil {
			t.Errorf("%s: AddTraces: %v", f.Path, err)
			continue
		}
		if given {
			// The file again: its indexes are taken, so nothing of it is stored.
			_, err := e.st.AddTraces(ctx, alice.ID, d.ID, batch)
			wantErr(t, f.Path+": the same indexes again", err, store.ErrConflict)
		}
		seen := map[int64]bool{}
		for i, id := range ids {
			st := e.get(id)
			want := batch[i].Trace
			if got, w := canonical(st.Trace), canonical(want); got != w {
				t.Errorf("%s: trace %d came back different\n got: %.300s\nwant: %.300s", f.Path, i, got, w)
			}
			if st.ID != id || st.DatasetID != d.ID || st.OwnerID != alice.ID || fmt.Sprint(st.Hierarchy) != fmt.Sprint(batch[i].Hierarchy) {
				t.Errorf("%s: trace %d: stored as %+v", f.Path, i, st)
			}
			if want.Index != nil && st.Index != *want.Index {
				t.Errorf("%s: trace %d: index %d, want the given %d", f.Path, i, st.Index, *want.Index)
			}
			if seen[st.Index] {
				t.Errorf("%s: index %d given twice", f.Path, st.Index)
			}
			seen[st.Index] = true
			checkTime(t, "trace", st.CreatedAt)
			as, err := e.st.ListAnnotations(ctx, id)
			if err != nil || len(as) != len(batch[i].Annotations) {
				t.Errorf("%s: trace %d: %d annotations (%v), want %d", f.Path, i, len(as), err, len(batch[i].Annotations))
				continue
			}
			for j, a := range as {
				w := batch[i].Annotations[j]
				if a.Address != w.Address || a.Content != w.Content || a.Source != w.Source || a.Author != w.Author || string(a.Extra) != string(w.Extra) {
					t.Errorf("%s: trace %d: annotation %d = %+v, want %+v", f.Path, i, j, a, w)
				}
			}
		}
		if n := e.ds(d.ID).TraceCount; n != int64(len(ids)) {
			t.Errorf("%s: TraceCount %d, want %d", f.Path, n, len(ids))
		}
		total += len(ids)
	}
	t.Logf("%d corpus traces stored and read back", total)
}

func testTraceFields(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	cases := []struct {
		name string
		nt   store.NewTrace
	}{
		{"no name, no metadata", store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("hi")}}}}},
		{"no events", store.NewTrace{Trace: &trace.Trace{Name: "empty"}}},
		{"metadata with unicode and escapes", store.NewTrace{Trace: &trace.Trace{Name: "é \"q\"", Metadata: json.RawMessage(`{"k":"\u00e9\n","n":[1,{"x":null}]}`)}}},
		{"source id and extra members", store.NewTrace{Trace: &trace.Trace{ID: "src-7", Extra: trace.Fields{{Key: "z", Value: json.RawMessage(`{"deep":[1]}`)}}}}},
		{"NUL in the name", store.NewTrace{Trace: &trace.Trace{Name: "a\x00b é"}}},
		{"invalid UTF-8 in the metadata", store.NewTrace{Trace: &trace.Trace{Metadata: json.RawMessage("{\"a\":\"\xff\"}")}}},
		{"hierarchy", store.NewTrace{Trace: &trace.Trace{Name: "h"}, Hierarchy: []string{"a", "b/c", "ü"}}},
		{"large content", store.NewTrace{Trace: &trace.Trace{Name: "big", Events: []trace.Event{{Role: "assistant", Content: trace.TextContent(strings.Repeat("lorem ipsum ", 20000))}}}}},
		{"spans", store.NewTrace{Trace: &trace.Trace{Name: "sp", Spans: []trace.Span{{ID: "s1", Name: "root", Start: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC), Attributes: json.RawMessage(`{"a":1}`)}, {ID: "s2", ParentID: "s1", Name: "child"}},
			Events: []trace.Event{{Role: "user", SpanID: "s2", Content: trace.TextContent("x")}}}}},
	}
	for _, c := range cases {
		for _, where := range []string{d.ID, ""} {
			ids, err := e.st.AddTraces(ctx, alice.ID, where, []store.NewTrace{c.nt})
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			st := e.get(ids[0])
			want := canonical(c.nt.Trace)
			if c.nt.Trace.Metadata != nil {
				// Metadata is JSON, and JSON is UTF-8: a byte that is not
				// valid UTF-8 reads back as U+FFFD, as encoding/json reads it.
				want = strings.ReplaceAll(want, "\xff", "\uFFFD")
			}
			if got := canonical(st.Trace); got != want {
				t.Errorf("%s (dataset %q): came back as\n%.400s\nwant\n%.400s", c.name, where, got, want)
			}
			if where != "" {
				items, _, err := e.st.ListTraces(ctx, where, store.Page{Limit: 1000})
				if err != nil || items[len(items)-1].ID != ids[0] {
					t.Fatalf("%s: not listed last: %v", c.name, err)
				}
				if got, want := items[len(items)-1].Name, strings.ReplaceAll(strings.ToValidUTF8(c.nt.Trace.Name, "\uFFFD"), "\x00", ""); got != want {
					t.Errorf("%s: listed name %q, want %q", c.name, got, want)
				}
			}
			if fmt.Sprintf("%q", st.Hierarchy) != fmt.Sprintf("%q", c.nt.Hierarchy) && len(c.nt.Hierarchy)+len(st.Hierarchy) > 0 {
				t.Errorf("%s: hierarchy %q, want %q", c.name, st.Hierarchy, c.nt.Hierarchy)
			}
			if st.DatasetID != where || st.OwnerID != alice.ID {
				t.Errorf("%s: dataset %q owner %q, want %q %q", c.name, st.DatasetID, st.OwnerID, where, alice.ID)
			}
		}
	}
	// A trace outside any dataset keeps the index it came with (or 0), and
	// any number of them may share one.
	ids := e.add(alice.ID, "", simple("x", 1, idx(4)), simple("y", 1, idx(4)), simple("z", 1, nil))
	for i, want := range []int64{4, 4, 0} {
		if st := e.get(ids[i]); st.Index != want || st.DatasetID != "" {
			t.Errorf("trace outside a dataset %d: index %d dataset %q, want %d", i, st.Index, st.DatasetID, want)
		}
	}
	// The caller's trace is not changed by storing it.
	nt := simple("mine", 2, nil)
	before := canonical(nt.Trace)
	e.add(alice.ID, d.ID, nt)
	if canonical(nt.Trace) != before {
		t.Error("AddTraces changed the trace it was given")
	}
}

// testIndexConflicts: a trace whose given index is taken (by the dataset,
// or by an earlier trace of the batch) fails the batch naming the trace and
// the index, is skipped, or is given an index after the last one, as asked;
// the other traces are stored either way.
func testIndexConflicts(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	type want struct {
		ids       string // per trace: "+" stored, "-" skipped
		conflicts string // "trace:index>new" ...
		indexes   string // the dataset's indexes after, in order
	}
	cases := []struct {
		name string
		mode store.OnConflict
		want want
	}{
		{"skip", store.ConflictSkip, want{"+-+-", "1:1>-1 3:7>-1", "0 1 2 5 7 8"}},
		{"append", store.ConflictAppend, want{"++++", "1:1>8 3:7>10", "0 1 2 5 7 8 9 10"}},
	}
	// The dataset holds 0 1 2 7; the batch gives 5 (free), 1 (taken), no
	// index, and 7 (taken).
	batch := func() []store.NewTrace {
		return []store.NewTrace{simple("a", 1, idx(5)), simple("b", 1, idx(1)), simple("c", 1, nil), simple("d", 1, idx(7))}
	}
	for ci, c := range cases {
		d := e.dataset(alice, fmt.Sprintf("conflicts-%d", ci), false)
		e.add(alice.ID, d.ID, simple("x", 1, nil), simple("y", 1, nil), simple("z", 1, nil))
		e.add(alice.ID, d.ID, simple("w", 1, idx(7)))
		// Fail (the default): nothing stored, the first clash named.
		_, err := e.st.AddTraces(e.ctx, alice.ID, d.ID, batch())
		var taken *store.IndexTakenError
		if !errors.As(err, &taken) || !errors.Is(err, store.ErrConflict) || taken.Trace != 1 || taken.Index != 1 || taken.InBatch != -1 {
			t.Fatalf("%s: fail: %v, want trace 1's index 1 taken by the dataset", c.name, err)
		}
		in := []store.NewTrace{simple("p", 1, idx(20)), simple("q", 1, idx(20))}
		if _, err := e.st.AddTracesWith(e.ctx, alice.ID, d.ID, in, store.AddOptions{}); !errors.As(err, &taken) || taken.Trace != 1 || taken.InBatch != 0 {
			t.Errorf("%s: an index twice in the batch: %v", c.name, err)
		}
		res, err := e.st.AddTracesWith(e.ctx, alice.ID, d.ID, batch(), store.AddOptions{OnConflict: c.mode})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var ids, conf []string
		for _, id := range res.IDs {
			ids = append(ids, map[bool]string{true: "+", false: "-"}[id != ""])
		}
		for _, x := range res.Conflicts {
			conf = append(conf, fmt.Sprintf("%d:%d>%d", x.Trace, x.Index, x.NewIndex))
		}
		if got := strings.Join(ids, ""); got != c.want.ids || strings.Join(conf, " ") != c.want.conflicts {
			t.Errorf("%s: ids %s conflicts %v, want %s %s", c.name, got, conf, c.want.ids, c.want.conflicts)
		}
		// The others are stored: the trace with no index gets the next one.
		var idxs []string
		for _, s := range e.listAll(d.ID, 0) {
			idxs = append(idxs, fmt.Sprint(s.Index))
		}
		if got := strings.Join(idxs, " "); got != c.want.indexes {
			t.Errorf("%s: indexes %s, want %s", c.name, got, c.want.indexes)
		}
		if got := e.ds(d.ID).TraceCount; got != int64(len(idxs)) {
			t.Errorf("%s: trace count %d, want %d", c.name, got, len(idxs))
		}
		// A moved trace reads back with its new index.
		for _, x := range res.Conflicts {
			if x.NewIndex < 0 {
				continue
			}
			if st := e.get(res.IDs[x.Trace]); st.Index != x.NewIndex || st.Trace.Index == nil || *st.Trace.Index != x.NewIndex {
				t.Errorf("%s: trace %d stored at %d, content index %v, want %d", c.name, x.Trace, st.Index, st.Trace.Index, x.NewIndex)
			}
		}
	}
}

func testIndexes(t *testing.T, open func(t *testing.T) store.Store) {
	type batch struct {
		given []*int64
		want  []int64 // indexes assigned; nil when the batch fails
		err   error
	}
	cases := []struct {
		name    string
		batches []batch
	}{
		{"next index", []batch{
			{[]*int64{nil, nil, nil}, []int64{0, 1, 2}, nil},
			{[]*int64{nil}, []int64{3}, nil},
		}},
		{"given index kept", []batch{
			{[]*int64{idx(5)}, []int64{5}, nil},
			{[]*int64{nil, nil}, []int64{6, 7}, nil},
		}},
		{"given index in a batch", []batch{
			{[]*int64{nil, idx(1), nil, idx(7)}, []int64{0, 1, 2, 7}, nil},
			{[]*int64{nil}, []int64{8}, nil},
		}},
		{"index given later in a batch", []batch{
			{[]*int64{nil, nil, idx(1)}, []int64{0, 2, 1}, nil},
			{[]*int64{nil}, []int64{3}, nil},
		}},
		{"free index below the next", []batch{
			{[]*int64{idx(10)}, []int64{10}, nil},
			{[]*int64{idx(3), nil}, []int64{3, 11}, nil},
		}},
		{"taken index", []batch{
			{[]*int64{nil, nil}, []int64{0, 1}, nil},
			{[]*int64{nil, idx(1), nil}, nil, store.ErrConflict},
			{[]*int64{nil}, []int64{2}, nil},
		}},
		{"same index twice in a batch", []batch{
			{[]*int64{idx(2), idx(2)}, nil, store.ErrConflict},
			{[]*int64{idx(2)}, []int64{2}, nil},
		}},
		{"negative index", []batch{
			{[]*int64{nil, idx(-1)}, nil, store.ErrInvalid},
		}},
	}
	e := newEnv(t, open)
	alice := e.user("alice")
	for ci, c := range cases {
		d := e.dataset(alice, fmt.Sprintf("idx-%d", ci), false)
		stored := map[int64]string{}
		for bi, b := range c.batches {
			nts := make([]store.NewTrace, len(b.given))
			for i, g := range b.given {
				nts[i] = simple(fmt.Sprintf("b%d-%d", bi, i), 1, g)
			}
			before := e.ds(d.ID)
			ids, err := e.st.AddTraces(e.ctx, alice.ID, d.ID, nts)
			wantErr(t, fmt.Sprintf("%s: batch %d", c.name, bi), err, b.err)
			after := e.ds(d.ID)
			if err != nil {
				if after.TraceCount != before.TraceCount || fmt.Sprint(after.LastPushed) != fmt.Sprint(before.LastPushed) {
					t.Errorf("%s: batch %d failed but changed the dataset: %+v -> %+v", c.name, bi, before, after)
				}
				continue
			}
			for i, id := range ids {
				st := e.get(id)
				if st.Index != b.want[i] {
					t.Errorf("%s: batch %d trace %d: index %d, want %d", c.name, bi, i, st.Index, b.want[i])
				}
				stored[st.Index] = id
			}
			if after.TraceCount != int64(len(stored)) {
				t.Errorf("%s: TraceCount %d, want %d", c.name, after.TraceCount, len(stored))
			}
			if after.LastPushed == nil {
				t.Errorf("%s: LastPushed not set", c.name)
			} else {
				checkTime(t, "last pushed", *after.LastPushed)
			}
		}
		listed := e.listAll(d.ID, 0)
		if len(listed) != len(stored) {
			t.Errorf("%s: %d traces listed, want %d", c.name, len(listed), len(stored))
		}
		for _, s := range listed {
			if stored[s.Index] != s.ID {
				t.Errorf("%s: listed index %d is %s, want %s", c.name, s.Index, s.ID, stored[s.Index])
			}
		}
	}
}

func testAddTracesErrors(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	ok := simple("ok", 1, nil)
	cases := []struct {
		name    string
		owner   string
		dataset string
		traces  []store.NewTrace
		want    error
	}{
		{"unknown dataset", alice.ID, missingID, []store.NewTrace{ok}, store.ErrNotFound},
		{"malformed dataset id", alice.ID, "d", []store.NewTrace{ok}, store.ErrNotFound},
		{"unknown owner", missingID, d.ID, []store.NewTrace{ok}, store.ErrNotFound},
		{"unknown owner outside a dataset", missingID, "", []store.NewTrace{ok}, store.ErrNotFound},
		{"nil trace after a good one", alice.ID, d.ID, []store.NewTrace{ok, {}}, store.ErrInvalid},
		{"metadata not an object", alice.ID, d.ID, []store.NewTrace{ok, {Trace: &trace.Trace{Metadata: json.RawMessage(`[]`)}}}, store.ErrInvalid},
		{"annotations left in the trace", alice.ID, d.ID, []store.NewTrace{{Trace: &trace.Trace{Annotations: []trace.Annotation{{Address: "messages[0]", Content: "x"}}}}}, store.ErrInvalid},
		{"annotation without source", alice.ID, d.ID, []store.NewTrace{ok, {Trace: ok.Trace, Annotations: []store.Annotation{{Address: "messages[0]"}}}}, store.ErrInvalid},
	}
	for _, c := range cases {
		_, err := e.st.AddTraces(e.ctx, c.owner, c.dataset, c.traces)
		wantErr(t, c.name, err, c.want)
	}
	if got := e.ds(d.ID); got.TraceCount != 0 || got.LastPushed != nil {
		t.Errorf("failed batches changed the dataset: %+v", got)
	}
	if items, _, err := e.st.ListTraces(e.ctx, d.ID, store.Page{}); err != nil || len(items) != 0 {
		t.Errorf("failed batches left traces: %d, %v", len(items), err)
	}
	ids, err := e.st.AddTraces(e.ctx, alice.ID, d.ID, nil)
	if err != nil || len(ids) != 0 {
		t.Errorf("an empty batch: %v, %v", ids, err)
	}
	_, err = e.st.AddTraces(e.ctx, alice.ID, missingID, nil)
	wantErr(t, "an empty batch into an unknown dataset", err, store.ErrNotFound)
}

func testPagination(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "many", false)
	const n = 250
	var all []string
	for b := 0; b < n; b += 50 {
		batch := make([]store.NewTrace, 50)
		for i := range batch {
			batch[i] = simple(fmt.Sprintf("t%03d", b+i), 1+(b+i)%4, nil)
			if (b+i)%10 == 0 {
				batch[i].Annotations = []store.Annotation{{Address: "messages[0]", Content: "a", Source: "user"}, {Address: "messages[0]", Content: "b", Source: "analyzer"}}
			}
		}
		all = append(all, e.add(alice.ID, d.ID, batch...)...)
	}
	// Remove some, so pages run over gaps in the indexes.
	deleted := map[int]bool{}
	for _, i := range []int{0, 7, 8, 99, 100, 249} {
		if err := e.st.DeleteTrace(e.ctx, all[i]); err != nil {
			t.Fatal(err)
		}
		deleted[i] = true
	}
	for _, limit := range []int{1, 7, 100, 0, 5000} {
		listed := e.listAll(d.ID, limit)
		var want []int
		for i := range n {
			if !deleted[i] {
				want = append(want, i)
			}
		}
		if len(listed) != len(want) {
			t.Errorf("limit %d: %d traces listed, want %d", limit, len(listed), len(want))
			continue
		}
		for j, s := range listed {
			i := want[j]
			if s.ID != all[i] || s.Index != int64(i) || s.Name != fmt.Sprintf("t%03d", i) || s.EventCount != 1+i%4 || string(s.Metadata) != fmt.Sprintf(`{"name":"t%03d"}`, i) {
				t.Errorf("limit %d: item %d = %+v, want trace %d", limit, j, s, i)
				break
			}
			if wantAnn := map[bool]int{true: 2, false: 0}[i%10 == 0]; s.AnnotationCount != wantAnn {
				t.Errorf("limit %d: trace %d: %d annotations, want %d", limit, i, s.AnnotationCount, wantAnn)
			}
			if s.CreatedAt.IsZero() || s.CreatedAt.Location() != time.UTC {
				t.Errorf("limit %d: trace %d: created %v", limit, i, s.CreatedAt)
			}
		}
	}
	items, next, err := e.st.ListTraces(e.ctx, d.ID, store.Page{})
	if err != nil || len(items) == 0 || len(items) > 100 || next == "" {
		t.Errorf("the default page: %d items, next %q, %v; want at most 100 and more to come", len(items), next, err)
	}
	items, _, err = e.st.ListTraces(e.ctx, d.ID, store.Page{Limit: 1 << 30})
	if err != nil || len(items) == 0 || len(items) >= 1<<30 {
		t.Errorf("a huge limit: %d items, %v", len(items), err)
	}
	empty := e.dataset(alice, "empty", false)
	if items, next, err := e.st.ListTraces(e.ctx, empty.ID, store.Page{}); err != nil || len(items) != 0 || next != "" {
		t.Errorf("an empty dataset: %v, %q, %v", items, next, err)
	}
	for _, bad := range []string{"garbage!", "eyJ4IjoxfQ"} {
		_, _, err := e.st.ListTraces(e.ctx, d.ID, store.Page{Cursor: bad})
		wantErr(t, "cursor "+bad, err, store.ErrInvalid)
	}
	_, _, err = e.st.ListTraces(e.ctx, missingID, store.Page{})
	wantErr(t, "unknown dataset", err, store.ErrNotFound)
}

func testAppendEvents(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "live", false)
	small := simple("small", 1, nil)
	big := simple("big", 1, nil)
	big.Trace.Events[0].Content = trace.TextContent(strings.Repeat("many words ", 5000))
	ids := e.add(alice.ID, d.ID, small, big)
	more := []trace.Event{
		{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "c1", Type: "function", Function: trace.Function{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}}},
		{Role: "tool", ToolCallID: "c1", Content: trace.TextContent("ok")},
	}
	for i, id := range ids {
		orig := []store.NewTrace{small, big}[i].Trace
		if err := e.st.AppendEvents(e.ctx, id, more[:1]); err != nil {
			t.Fatal(err)
		}
		if err := e.st.AppendEvents(e.ctx, id, more[1:]); err != nil {
			t.Fatal(err)
		}
		if err := e.st.AppendEvents(e.ctx, id, nil); err != nil {
			t.Errorf("appending nothing: %v", err)
		}
		want := *orig
		want.Events = append(append([]trace.Event{}, orig.Events...), more...)
		st := e.get(id)
		if canonical(st.Trace) != canonical(&want) {
			t.Errorf("trace %d after AppendEvents:\n%.300s\nwant\n%.300s", i, canonical(st.Trace), canonical(&want))
		}
		if st.Index != int64(i) {
			t.Errorf("AppendEvents moved trace %d to index %d", i, st.Index)
		}
	}
	for _, s := range e.listAll(d.ID, 0) {
		if s.EventCount != 3 {
			t.Errorf("%s: EventCount %d after appending, want 3", s.Name, s.EventCount)
		}
	}
	wantErr(t, "unknown trace", e.st.AppendEvents(e.ctx, missingID, more), store.ErrNotFound)
	wantErr(t, "malformed id", e.st.AppendEvents(e.ctx, "x", more), store.ErrNotFound)
}

func testDeleteTrace(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	nt := simple("a", 1, nil)
	nt.Annotations = []store.Annotation{{Address: "messages[0]", Content: "n", Source: "user"}}
	ids := e.add(alice.ID, d.ID, nt, simple("b", 1, nil), simple("c", 1, nil))
	loose := e.add(alice.ID, "", simple("loose", 1, nil))
	if err := e.st.DeleteTrace(e.ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteTrace(e.ctx, loose[0]); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ids[0], loose[0]} {
		_, err := e.st.Trace(e.ctx, id)
		wantErr(t, "deleted trace", err, store.ErrNotFound)
		_, err = e.st.ListAnnotations(e.ctx, id)
		wantErr(t, "annotations of a deleted trace", err, store.ErrNotFound)
		wantErr(t, "deleting twice", e.st.DeleteTrace(e.ctx, id), store.ErrNotFound)
	}
	if got := e.ds(d.ID).TraceCount; got != 2 {
		t.Errorf("TraceCount %d after a delete, want 2", got)
	}
	listed := e.listAll(d.ID, 0)
	if len(listed) != 2 || listed[0].ID != ids[1] || listed[0].Index != 1 || listed[1].ID != ids[2] || listed[1].Index != 2 {
		t.Errorf("after deleting the first trace: %+v", listed)
	}
}

// ---- annotations ----

func testAnnotations(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	ids := e.add(alice.ID, d.ID, simple("a", 2, nil), simple("b", 1, nil))
	a1, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Address: "messages[0].content:0-5", Content: "first", Source: "user", Author: "alice", Extra: json.RawMessage(`{"z":1,"a":[true]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a1.ID == "" || a1.TraceID != ids[0] || a1.Address != "messages[0].content:0-5" || a1.Content != "first" || a1.Source != "user" || a1.Author != "alice" || string(a1.Extra) != `{"z":1,"a":[true]}` || !a1.CreatedAt.Equal(a1.UpdatedAt) {
		t.Errorf("CreateAnnotation = %+v", a1)
	}
	checkTime(t, "annotation", a1.CreatedAt)
	a2, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Address: "messages[1]", Content: "second", Source: "analyzer"})
	if err != nil {
		t.Fatal(err)
	}
	if a2.Extra != nil || a2.Author != "" {
		t.Errorf("an annotation without extra or author = %+v", a2)
	}
	a3, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Address: "messages[0]", Content: "third", Source: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[1], Address: "messages[0]", Content: "other trace", Source: "user"}); err != nil {
		t.Fatal(err)
	}
	list := func() []store.Annotation {
		t.Helper()
		as, err := e.st.ListAnnotations(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		return as
	}
	if got := list(); len(got) != 3 || !sameAnnotation(got[0], a1) || !sameAnnotation(got[1], a2) || !sameAnnotation(got[2], a3) {
		t.Errorf("ListAnnotations = %+v, want [%+v %+v %+v] in order", got, a1, a2, a3)
	}
	if items, _, _ := e.st.ListTraces(ctx, d.ID, store.Page{}); items[0].AnnotationCount != 3 || items[1].AnnotationCount != 1 {
		t.Errorf("annotation counts %d, %d; want 3, 1", items[0].AnnotationCount, items[1].AnnotationCount)
	}

	time.Sleep(2 * time.Millisecond)
	upd := a2
	upd.Content, upd.Extra = "changed", json.RawMessage(`{"score":0.5}`)
	upd.Address, upd.Source, upd.Author = "ignored", "ignored", "ignored"
	got, err := e.st.UpdateAnnotation(ctx, upd)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "changed" || string(got.Extra) != `{"score":0.5}` || got.Address != a2.Address || got.Source != a2.Source || got.Author != a2.Author || !got.CreatedAt.Equal(a2.CreatedAt) || !got.UpdatedAt.After(a2.UpdatedAt) {
		t.Errorf("UpdateAnnotation = %+v (from %+v)", got, a2)
	}
	if l := list(); !sameAnnotation(l[1], got) {
		t.Errorf("the update was not stored: %+v", l[1])
	}
	got.Extra = nil
	if got, err := e.st.UpdateAnnotation(ctx, got); err != nil || got.Extra != nil {
		t.Errorf("clearing extra: %+v, %v", got, err)
	}

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"create on unknown trace", func() error {
			_, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: missingID, Source: "user"})
			return err
		}, store.ErrNotFound},
		{"create without source", func() error {
			_, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0]})
			return err
		}, store.ErrInvalid},
		{"create with NUL in content", func() error {
			_, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Source: "user", Content: "a\x00"})
			return err
		}, store.ErrInvalid},
		{"create with extra not an object", func() error {
			_, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Source: "user", Extra: json.RawMessage(`1`)})
			return err
		}, store.ErrInvalid},
		{"update unknown", func() error {
			_, err := e.st.UpdateAnnotation(ctx, store.Annotation{ID: missingID, Content: "x"})
			return err
		}, store.ErrNotFound},
		{"update through another trace", func() error {
			_, err := e.st.UpdateAnnotation(ctx, store.Annotation{ID: a1.ID, TraceID: ids[1], Content: "x"})
			return err
		}, store.ErrNotFound},
		{"update with extra not JSON", func() error {
			_, err := e.st.UpdateAnnotation(ctx, store.Annotation{ID: a1.ID, Content: "x", Extra: json.RawMessage(`{`)})
			return err
		}, store.ErrInvalid},
		{"delete unknown", func() error { return e.st.DeleteAnnotation(ctx, missingID) }, store.ErrNotFound},
		{"list of unknown trace", func() error { _, err := e.st.ListAnnotations(ctx, missingID); return err }, store.ErrNotFound},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), c.want)
	}
	if l := list(); l[0].Content != "first" {
		t.Errorf("a failed update changed the annotation: %+v", l[0])
	}
	if err := e.st.DeleteAnnotation(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l) != 2 || l[0].ID != a2.ID || l[1].ID != a3.ID {
		t.Errorf("after delete: %+v", l)
	}
	wantErr(t, "delete twice", e.st.DeleteAnnotation(ctx, a1.ID), store.ErrNotFound)
}

func sameAnnotation(a, b store.Annotation) bool {
	return a.ID == b.ID && a.TraceID == b.TraceID && a.Address == b.Address && a.Content == b.Content && a.Source == b.Source &&
		a.Author == b.Author && string(a.Extra) == string(b.Extra) && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func testReplaceAnnotations(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	ids := e.add(alice.ID, d.ID, simple("a", 2, nil), simple("b", 2, nil))
	mine, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Address: "messages[0]", Content: "mine", Source: "user"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[1], Address: "messages[0]", Content: "other trace", Source: "analyzer"})
	if err != nil {
		t.Fatal(err)
	}
	contents := func(id string) []string {
		t.Helper()
		as, err := e.st.ListAnnotations(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range as {
			out = append(out, a.Source+":"+a.Content)
		}
		return out
	}
	steps := []struct {
		name   string
		source string
		as     []store.Annotation
		want   []string
		err    error
	}{
		{"first results", "analyzer", []store.Annotation{{Address: "messages[0]", Content: "r1"}, {Address: "messages[1]", Content: "r2", Extra: json.RawMessage(`{"rule":"x"}`)}},
			[]string{"user:mine", "analyzer:r1", "analyzer:r2"}, nil},
		{"new results replace old", "analyzer", []store.Annotation{{Address: "messages[1]", Content: "r3", Source: "someone-else"}},
			[]string{"user:mine", "analyzer:r3"}, nil},
		{"another source", "search", []store.Annotation{{Address: "messages[0]", Content: "hit"}},
			[]string{"user:mine", "analyzer:r3", "search:hit"}, nil},
		{"empty list removes", "analyzer", nil,
			[]string{"user:mine", "search:hit"}, nil},
		{"no source", "", []store.Annotation{{Content: "x"}},
			[]string{"user:mine", "search:hit"}, store.ErrInvalid},
		{"bad extra: nothing changes", "search", []store.Annotation{{Content: "new"}, {Content: "bad", Extra: json.RawMessage(`[`)}},
			[]string{"user:mine", "search:hit"}, store.ErrInvalid},
	}
	for _, s := range steps {
		err := e.st.ReplaceAnnotations(ctx, ids[0], s.source, s.as)
		wantErr(t, s.name, err, s.err)
		if got := contents(ids[0]); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("%s: annotations %v, want %v", s.name, got, s.want)
		}
	}
	if got := contents(ids[1]); len(got) != 1 || got[0] != "analyzer:other trace" {
		t.Errorf("replacing on one trace touched another: %v", got)
	}
	as, _ := e.st.ListAnnotations(ctx, ids[0])
	if !sameAnnotation(as[0], mine) {
		t.Errorf("the user annotation changed: %+v, was %+v", as[0], mine)
	}
	for _, a := range as {
		if a.TraceID != ids[0] || a.ID == "" || a.ID == other.ID {
			t.Errorf("replaced annotation %+v", a)
		}
	}
	wantErr(t, "unknown trace", e.st.ReplaceAnnotations(ctx, missingID, "analyzer", nil), store.ErrNotFound)
}

// testReplaceAnnotationsOf replaces one policy's results among the
// analyzer's, leaving the others (and their ids) alone.
func testReplaceAnnotationsOf(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	ids := e.add(alice.ID, d.ID, simple("a", 2, nil))
	of := func(policy, content string) store.Annotation {
		return store.Annotation{Address: "messages.0", Content: content, Extra: json.RawMessage(`{"policy_id":"` + policy + `","rule":0}`)}
	}
	if err := e.st.ReplaceAnnotations(ctx, ids[0], "analyzer", []store.Annotation{of("p1", "old p1"), of("p2", "p2"), {Address: "messages.1", Content: "no extra"}}); err != nil {
		t.Fatal(err)
	}
	user, err := e.st.CreateAnnotation(ctx, store.Annotation{TraceID: ids[0], Address: "messages.0", Content: "user p1", Source: "user", Extra: json.RawMessage(`{"policy_id":"p1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := e.st.ListAnnotations(ctx, ids[0])
	if err := e.st.ReplaceAnnotationsOf(ctx, ids[0], "analyzer", "policy_id", "p1", []store.Annotation{of("p1", "new p1"), of("p1", "new p1 again")}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.st.ListAnnotations(ctx, ids[0])
	var got []string
	kept := map[string]string{}
	for _, a := range after {
		got = append(got, a.Source+":"+a.Content)
		kept[a.Content] = a.ID
	}
	want := []string{"analyzer:p2", "analyzer:no extra", "user:user p1", "analyzer:new p1", "analyzer:new p1 again"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
	for _, a := range before {
		if a.Content != "old p1" && kept[a.Content] != a.ID {
			t.Errorf("annotation %q changed id from %s to %s", a.Content, a.ID, kept[a.Content])
		}
	}
	if kept["user p1"] != user.ID {
		t.Errorf("the user's annotation was replaced")
	}
	// An empty list removes that policy's results only.
	if err := e.st.ReplaceAnnotationsOf(ctx, ids[0], "analyzer", "policy_id", "p1", nil); err != nil {
		t.Fatal(err)
	}
	after, _ = e.st.ListAnnotations(ctx, ids[0])
	if len(after) != 3 {
		t.Errorf("after removing p1's results: %d annotations, want 3", len(after))
	}
	wantErr(t, "bad key", e.st.ReplaceAnnotationsOf(ctx, ids[0], "analyzer", "policy'id", "p1", nil), store.ErrInvalid)
	wantErr(t, "no key", e.st.ReplaceAnnotationsOf(ctx, ids[0], "analyzer", "", "p1", nil), store.ErrInvalid)
	wantErr(t, "unknown trace", e.st.ReplaceAnnotationsOf(ctx, missingID, "analyzer", "policy_id", "p1", nil), store.ErrNotFound)
}

// ---- policies ----

func testPolicies(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d, other := e.dataset(alice, "d", false), e.dataset(alice, "other", false)
	p1, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "no-pii", Source: "raise 'pii'"})
	if err != nil {
		t.Fatal(err)
	}
	if p1.ID == "" || p1.DatasetID != d.ID || p1.Name != "no-pii" || p1.Source != "raise 'pii'" || !p1.CreatedAt.Equal(p1.UpdatedAt) {
		t.Errorf("SavePolicy = %+v", p1)
	}
	checkTime(t, "policy", p1.CreatedAt)
	time.Sleep(2 * time.Millisecond)
	p1b, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "no-pii", Source: "raise 'pii v2'"})
	if err != nil {
		t.Fatal(err)
	}
	if p1b.ID != p1.ID || p1b.Source != "raise 'pii v2'" || !p1b.CreatedAt.Equal(p1.CreatedAt) || !p1b.UpdatedAt.After(p1.UpdatedAt) {
		t.Errorf("saving by the same name = %+v, want an update of %+v", p1b, p1)
	}
	p2, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "a-loops", Source: "raise 'loop'"})
	if err != nil {
		t.Fatal(err)
	}
	po, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: other.ID, Name: "no-pii", Source: "x"})
	if err != nil || po.ID == p1.ID {
		t.Errorf("the same name in another dataset: %+v, %v", po, err)
	}
	ps, err := e.st.ListPolicies(ctx, d.ID)
	if err != nil || len(ps) != 2 || ps[0].ID != p2.ID || ps[1].ID != p1.ID || ps[1].Source != "raise 'pii v2'" {
		t.Errorf("ListPolicies = %+v, %v; want a-loops then no-pii", ps, err)
	}
	if got, err := e.st.Policy(ctx, p1.ID); err != nil || got.Source != "raise 'pii v2'" || got.Name != "no-pii" || !got.UpdatedAt.Equal(p1b.UpdatedAt) {
		t.Errorf("Policy = %+v, %v", got, err)
	}
	renamed, err := e.st.SavePolicy(ctx, store.Policy{ID: p2.ID, DatasetID: d.ID, Name: "loops", Source: "raise 'loop v2'"})
	if err != nil || renamed.ID != p2.ID || renamed.Name != "loops" || renamed.Source != "raise 'loop v2'" {
		t.Errorf("saving by id = %+v, %v", renamed, err)
	}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"rename onto a taken name", func() error {
			_, err := e.st.SavePolicy(ctx, store.Policy{ID: p2.ID, DatasetID: d.ID, Name: "no-pii", Source: "x"})
			return err
		}, store.ErrConflict},
		{"save by unknown id", func() error {
			_, err := e.st.SavePolicy(ctx, store.Policy{ID: missingID, DatasetID: d.ID, Name: "n", Source: "x"})
			return err
		}, store.ErrNotFound},
		{"save by id into another dataset", func() error {
			_, err := e.st.SavePolicy(ctx, store.Policy{ID: p2.ID, DatasetID: other.ID, Name: "n", Source: "x"})
			return err
		}, store.ErrNotFound},
		{"unknown dataset", func() error {
			_, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: missingID, Name: "n", Source: "x"})
			return err
		}, store.ErrNotFound},
		{"empty name", func() error {
			_, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Source: "x"})
			return err
		}, store.ErrInvalid},
		{"unknown policy", func() error { _, err := e.st.Policy(ctx, missingID); return err }, store.ErrNotFound},
		{"list of unknown dataset", func() error { _, err := e.st.ListPolicies(ctx, missingID); return err }, store.ErrNotFound},
		{"delete unknown", func() error { return e.st.DeletePolicy(ctx, missingID) }, store.ErrNotFound},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), c.want)
	}
	if err := e.st.DeletePolicy(ctx, p1.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.st.Policy(ctx, p1.ID)
	wantErr(t, "deleted policy", err, store.ErrNotFound)
	if ps, _ := e.st.ListPolicies(ctx, d.ID); len(ps) != 1 || ps[0].ID != p2.ID {
		t.Errorf("after delete: %+v", ps)
	}
}

// testPolicyModes checks the mode of saved policies: log unless said,
// kept and changed by every way of saving, and nothing but block or log.
func testPolicyModes(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	save := func(p store.Policy) store.Policy {
		t.Helper()
		p.DatasetID = d.ID
		out, err := e.st.SavePolicy(ctx, p)
		if err != nil {
			t.Fatalf("SavePolicy(%+v): %v", p, err)
		}
		return out
	}
	// mode checks what every read of policy id says its mode is.
	mode := func(what, id, want string) {
		t.Helper()
		if p, err := e.st.Policy(ctx, id); err != nil || p.Mode != want {
			t.Errorf("%s: Policy().Mode = %q (%v), want %q", what, p.Mode, err, want)
		}
		ps, err := e.st.ListPolicies(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.ID == id && p.Mode != want {
				t.Errorf("%s: ListPolicies().Mode = %q, want %q", what, p.Mode, want)
			}
		}
	}
	logged := save(store.Policy{Name: "logged", Source: "raise 'x'"})
	if logged.Mode != store.PolicyLog {
		t.Errorf("a policy saved without a mode has mode %q, want log", logged.Mode)
	}
	mode("default", logged.ID, store.PolicyLog)
	blocking := save(store.Policy{Name: "blocking", Source: "raise 'y'", Mode: store.PolicyBlock})
	if blocking.Mode != store.PolicyBlock {
		t.Errorf("SavePolicy(block) = mode %q", blocking.Mode)
	}
	mode("saved as block", blocking.ID, store.PolicyBlock)

	// By name: the mode given replaces the stored one ("" is log).
	if p := save(store.Policy{Name: "logged", Source: "raise 'x'", Mode: store.PolicyBlock}); p.ID != logged.ID || p.Mode != store.PolicyBlock {
		t.Errorf("saving by name with block = %+v", p)
	}
	mode("changed by name", logged.ID, store.PolicyBlock)
	save(store.Policy{Name: "logged", Source: "raise 'x'"})
	mode("saved by name without a mode", logged.ID, store.PolicyLog)
	// By id.
	if p := save(store.Policy{ID: blocking.ID, Name: "blocking", Source: "raise 'y'", Mode: store.PolicyLog}); p.Mode != store.PolicyLog {
		t.Errorf("saving by id with log = %+v", p)
	}
	mode("changed by id", blocking.ID, store.PolicyLog)
	save(store.Policy{ID: blocking.ID, Name: "blocking", Source: "raise 'y'", Mode: store.PolicyBlock})
	mode("changed back by id", blocking.ID, store.PolicyBlock)

	for _, bad := range []string{"Block", "warn", " log", "block\x00"} {
		_, err := e.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "bad", Source: "raise 'z'", Mode: bad})
		wantErr(t, fmt.Sprintf("new policy with mode %q", bad), err, store.ErrInvalid)
		_, err = e.st.SavePolicy(ctx, store.Policy{ID: blocking.ID, DatasetID: d.ID, Name: "blocking", Source: "raise 'y'", Mode: bad})
		wantErr(t, fmt.Sprintf("update to mode %q", bad), err, store.ErrInvalid)
	}
	mode("after refused updates", blocking.ID, store.PolicyBlock)
	if ps, err := e.st.ListPolicies(ctx, d.ID); err != nil || len(ps) != 2 {
		t.Errorf("a policy with a bad mode was stored: %+v, %v", ps, err)
	}
}

// testNotFound checks every lookup of an id that names nothing, in both the
// UUID form and a malformed one.
func testNotFound(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	for _, id := range []string{missingID, "nope", "", "00000000-0000-0000-0000-00000000000Z"} {
		calls := map[string]func() error{
			"UserByID":           func() error { _, err := e.st.UserByID(ctx, id); return err },
			"Dataset":            func() error { _, err := e.st.Dataset(ctx, id); return err },
			"DeleteDataset":      func() error { return e.st.DeleteDataset(ctx, id) },
			"SetDatasetMetadata": func() error { _, err := e.st.SetDatasetMetadata(ctx, id, json.RawMessage(`{}`), true); return err },
			"Trace":              func() error { _, err := e.st.Trace(ctx, id); return err },
			"ListTraces":         func() error { _, _, err := e.st.ListTraces(ctx, id, store.Page{}); return err },
			"AppendEvents":       func() error { return e.st.AppendEvents(ctx, id, nil) },
			"DeleteTrace":        func() error { return e.st.DeleteTrace(ctx, id) },
			"ListAnnotations":    func() error { _, err := e.st.ListAnnotations(ctx, id); return err },
			"UpdateAnnotation":   func() error { _, err := e.st.UpdateAnnotation(ctx, store.Annotation{ID: id}); return err },
			"DeleteAnnotation":   func() error { return e.st.DeleteAnnotation(ctx, id) },
			"ReplaceAnnotations": func() error { return e.st.ReplaceAnnotations(ctx, id, "s", nil) },
			"Policy":             func() error { _, err := e.st.Policy(ctx, id); return err },
			"ListPolicies":       func() error { _, err := e.st.ListPolicies(ctx, id); return err },
			"DeletePolicy":       func() error { return e.st.DeletePolicy(ctx, id) },
		}
		for name, call := range calls {
			wantErr(t, fmt.Sprintf("%s(%q)", name, id), call(), store.ErrNotFound)
		}
	}
}

// testCanceled checks that every method gives up on a context that has
// ended, with an error wrapping the context's.
func testCanceled(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "d", false)
	tid := e.add(alice.ID, d.ID, simple("a", 1, nil))[0]
	a, err := e.st.CreateAnnotation(e.ctx, store.Annotation{TraceID: tid, Source: "user"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.st.SavePolicy(e.ctx, store.Policy{DatasetID: d.ID, Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateAPIKey(e.ctx, alice.ID, "k", "h", "last"); err != nil {
		t.Fatal(err)
	}
	bench, err := e.st.CreateBenchmark(e.ctx, store.Benchmark{OwnerID: alice.ID, Name: "b", Key: "k", Criteria: json.RawMessage(`[]`), Items: json.RawMessage(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateSession(e.ctx, alice.ID, "s", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"canceled", canceled, context.Canceled}, {"deadline", expired, context.DeadlineExceeded}} {
		ctx := c.ctx
		st := e.st
		calls := map[string]func() error{
			"CountUsers":    func() error { _, err := st.CountUsers(ctx); return err },
			"CreateUser":    func() error { _, err := st.CreateUser(ctx, "bob", "h"); return err },
			"UserByName":    func() error { _, err := st.UserByName(ctx, "alice"); return err },
			"UserByID":      func() error { _, err := st.UserByID(ctx, alice.ID); return err },
			"LocalUser":     func() error { _, err := st.LocalUser(ctx); return err },
			"CreateAPIKey":  func() error { _, err := st.CreateAPIKey(ctx, alice.ID, "k2", "h2", "l"); return err },
			"ListAPIKeys":   func() error { _, err := st.ListAPIKeys(ctx, alice.ID); return err },
			"RevokeAPIKey":  func() error { return st.RevokeAPIKey(ctx, alice.ID, missingID) },
			"UserByAPIKey":  func() error { _, err := st.UserByAPIKey(ctx, "h"); return err },
			"CreateSession": func() error { return st.CreateSession(ctx, alice.ID, "s2", time.Now().Add(time.Hour)) },
			"UserBySession": func() error { _, err := st.UserBySession(ctx, "s"); return err },
			"DeleteSession": func() error { return st.DeleteSession(ctx, "s") },
			"CreateDataset": func() error { _, err := st.CreateDataset(ctx, store.Dataset{OwnerID: alice.ID, Name: "x"}); return err },
			"Dataset":       func() error { _, err := st.Dataset(ctx, d.ID); return err },
			"DatasetByName": func() error { _, err := st.DatasetByName(ctx, alice.ID, "d"); return err },
			"ListDatasets":  func() error { _, err := st.ListDatasets(ctx, alice.ID); return err },
			"DeleteDataset": func() error { return st.DeleteDataset(ctx, d.ID) },
			"SetDatasetMetadata": func() error {
				_, err := st.SetDatasetMetadata(ctx, d.ID, json.RawMessage(`{"a":1}`), false)
				return err
			},
			"AddTraces": func() error {
				_, err := st.AddTraces(ctx, alice.ID, d.ID, []store.NewTrace{simple("b", 1, nil)})
				return err
			},
			"CreateBenchmark": func() error {
				_, err := st.CreateBenchmark(ctx, store.Benchmark{OwnerID: alice.ID, Name: "b", Key: "k", Criteria: json.RawMessage(`[]`), Items: json.RawMessage(`[]`)})
				return err
			},
			"Benchmark":        func() error { _, err := st.Benchmark(ctx, bench.ID); return err },
			"ListBenchmarks":   func() error { _, err := st.ListBenchmarks(ctx, alice.ID); return err },
			"BenchmarkResults": func() error { _, err := st.BenchmarkResults(ctx, bench.ID); return err },
			"DeleteBenchmark":  func() error { return st.DeleteBenchmark(ctx, bench.ID) },
			"AddBenchmarkResult": func() error {
				_, err := st.AddBenchmarkResult(ctx, store.BenchmarkResult{BenchmarkID: bench.ID, DatasetID: d.ID, Summary: json.RawMessage(`{}`), Items: json.RawMessage(`[]`)})
				return err
			},
			"Trace":        func() error { _, err := st.Trace(ctx, tid); return err },
			"ListTraces":   func() error { _, _, err := st.ListTraces(ctx, d.ID, store.Page{}); return err },
			"AppendEvents": func() error { return st.AppendEvents(ctx, tid, simple("c", 1, nil).Trace.Events) },
			"DeleteTrace":  func() error { return st.DeleteTrace(ctx, tid) },
			"CreateAnnotation": func() error {
				_, err := st.CreateAnnotation(ctx, store.Annotation{TraceID: tid, Source: "user"})
				return err
			},
			"ListAnnotations":    func() error { _, err := st.ListAnnotations(ctx, tid); return err },
			"UpdateAnnotation":   func() error { _, err := st.UpdateAnnotation(ctx, a); return err },
			"DeleteAnnotation":   func() error { return st.DeleteAnnotation(ctx, a.ID) },
			"ReplaceAnnotations": func() error { return st.ReplaceAnnotations(ctx, tid, "user", nil) },
			"SavePolicy":         func() error { _, err := st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "q"}); return err },
			"ListPolicies":       func() error { _, err := st.ListPolicies(ctx, d.ID); return err },
			"Policy":             func() error { _, err := st.Policy(ctx, p.ID); return err },
			"DeletePolicy":       func() error { return st.DeletePolicy(ctx, p.ID) },
			"CreatePolicy": func() error {
				_, err := st.CreatePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "q2", Source: "x"})
				return err
			},
		}
		for name, call := range calls {
			wantErr(t, c.name+": "+name, call(), c.want)
		}
	}
	// Nothing happened.
	if n, _ := e.st.CountUsers(e.ctx); n != 1 {
		t.Errorf("%d users after canceled calls, want 1", n)
	}
	if got := e.ds(d.ID); got.TraceCount != 1 || string(got.Metadata) != "{}" {
		t.Errorf("canceled calls changed the dataset: %+v", got)
	}
	if as, err := e.st.ListAnnotations(e.ctx, tid); err != nil || len(as) != 1 {
		t.Errorf("canceled calls changed the annotations: %v, %v", as, err)
	}
	if _, err := e.st.UserBySession(e.ctx, "s"); err != nil {
		t.Errorf("a canceled DeleteSession deleted the session: %v", err)
	}

	// A context that ends while a big batch is being written: the batch is
	// stored whole (it finished first) or not at all.
	big := make([]store.NewTrace, 2000)
	for i := range big {
		big[i] = simple(fmt.Sprintf("big-%d", i), 3, nil)
	}
	var whole, none int
	for _, after := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		dd := e.dataset(alice, fmt.Sprintf("cancel-%v", after), false)
		ctx, cancel := context.WithTimeout(context.Background(), after)
		ids, err := e.st.AddTraces(ctx, alice.ID, dd.ID, big)
		cancel()
		n := e.ds(dd.ID).TraceCount
		listed := len(e.listAll(dd.ID, 1000))
		switch {
		case err == nil && len(ids) == len(big) && n == int64(len(big)) && listed == len(big):
			whole++
		case errors.Is(err, context.DeadlineExceeded) && n == 0 && listed == 0:
			none++
		default:
			t.Errorf("AddTraces canceled after %v: error %v, %d ids, dataset counts %d, %d listed; want all or nothing", after, err, len(ids), n, listed)
		}
	}
	if none == 0 {
		t.Error("no AddTraces was stopped by its context")
	}
	t.Logf("big batches under a deadline: %d stored whole, %d not at all", whole, none)
}

// testConcurrentAdds adds batches from several goroutines at once: every
// trace must be stored once with its own index, with no gaps.
func testConcurrentAdds(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "busy", false)
	const writers, batches, size = 8, 10, 5
	errs := make(chan error, writers)
	got := make(chan []string, writers*batches)
	for w := range writers {
		go func() {
			for b := range batches {
				nts := make([]store.NewTrace, size)
				for i := range nts {
					nts[i] = simple(fmt.Sprintf("w%d-b%d-%d", w, b, i), 1, nil)
				}
				ids, err := e.st.AddTraces(e.ctx, alice.ID, d.ID, nts)
				if err != nil {
					errs <- err
					return
				}
				got <- ids
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent AddTraces: %v", err)
		}
	}
	close(got)
	seen := map[string]bool{}
	for ids := range got {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("id %s returned twice", id)
			}
			seen[id] = true
		}
	}
	const n = writers * batches * size
	listed := e.listAll(d.ID, 37)
	if len(listed) != n || len(seen) != n {
		t.Fatalf("%d traces listed, %d ids returned; want %d", len(listed), len(seen), n)
	}
	for i, s := range listed {
		if s.Index != int64(i) || !seen[s.ID] {
			t.Fatalf("listed %d: index %d id %s; want index %d of a returned id", i, s.Index, s.ID, i)
		}
	}
	// Each batch got consecutive indexes: a batch is one transaction.
	for _, s := range listed {
		var w, b, i int
		fmt.Sscanf(s.Name, "w%d-b%d-%d", &w, &b, &i)
		first := listed[s.Index-int64(i)]
		if first.Name != fmt.Sprintf("w%d-b%d-0", w, b) {
			t.Errorf("batch w%d-b%d is not contiguous: index %d holds %s", w, b, s.Index-int64(i), first.Name)
			break
		}
	}
	if got := e.ds(d.ID).TraceCount; got != n {
		t.Errorf("TraceCount %d, want %d", got, n)
	}
}
