package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

// testCreatePolicy checks that CreatePolicy creates, and refuses a name the
// dataset already has without touching the policy that has it.
func testCreatePolicy(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d, other := e.dataset(alice, "d", false), e.dataset(alice, "other", false)
	p, err := e.st.CreatePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "no-pii", Source: "raise 'pii'", Mode: store.PolicyBlock})
	if err != nil {
		t.Fatal(err)
	}
	if p.ID == "" || p.DatasetID != d.ID || p.Name != "no-pii" || p.Source != "raise 'pii'" || p.Mode != store.PolicyBlock || !p.CreatedAt.Equal(p.UpdatedAt) {
		t.Errorf("CreatePolicy = %+v", p)
	}
	checkTime(t, "policy", p.CreatedAt)
	_, err = e.st.CreatePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "no-pii", Source: "raise 'other'"})
	wantErr(t, "a name the dataset has", err, store.ErrConflict)
	if got, err := e.st.Policy(ctx, p.ID); err != nil || got.Source != "raise 'pii'" || got.Mode != store.PolicyBlock || !got.UpdatedAt.Equal(p.UpdatedAt) {
		t.Errorf("after a refused creation, Policy = %+v, %v; want %+v unchanged", got, err, p)
	}
	if po, err := e.st.CreatePolicy(ctx, store.Policy{DatasetID: other.ID, Name: "no-pii", Source: "x"}); err != nil || po.ID == p.ID {
		t.Errorf("the same name in another dataset: %+v, %v", po, err)
	}
	// Updates still go through SavePolicy.
	if up, err := e.st.SavePolicy(ctx, store.Policy{ID: p.ID, DatasetID: d.ID, Name: "no-pii", Source: "raise 'v2'"}); err != nil || up.ID != p.ID || up.Source != "raise 'v2'" {
		t.Errorf("SavePolicy by id after CreatePolicy = %+v, %v", up, err)
	}
	_, err = e.st.CreatePolicy(ctx, store.Policy{DatasetID: missingID, Name: "n", Source: "x"})
	wantErr(t, "an unknown dataset", err, store.ErrNotFound)
	_, err = e.st.CreatePolicy(ctx, store.Policy{DatasetID: d.ID, Source: "x"})
	wantErr(t, "no name", err, store.ErrInvalid)
	_, err = e.st.CreatePolicy(ctx, store.Policy{DatasetID: d.ID, Name: "m", Source: "x", Mode: "sometimes"})
	wantErr(t, "an unknown mode", err, store.ErrInvalid)
}

// testCreatePolicyRace fires creations of one name at once: exactly one
// wins, the others are ErrConflict, and the stored policy is the winner's.
func testCreatePolicyRace(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	d := e.dataset(e.user("alice"), "d", false)
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	created := make([]store.Policy, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			created[i], errs[i] = e.st.CreatePolicy(e.ctx, store.Policy{DatasetID: d.ID, Name: "one", Source: "raise '" + string(rune('a'+i)) + "'"})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("creations %d and %d both succeeded", winner, i)
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("creation %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no creation succeeded")
	}
	ps, err := e.st.ListPolicies(e.ctx, d.ID)
	if err != nil || len(ps) != 1 || ps[0].ID != created[winner].ID || ps[0].Source != created[winner].Source {
		t.Errorf("ListPolicies = %+v, %v; want only the winner %+v", ps, err, created[winner])
	}
}
