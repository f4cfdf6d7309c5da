package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestCreatePolicyRace posts policies of one name at once: exactly one
// creation answers 201, the others 409, and the stored policy is the
// winner's (the second no longer overwrites the first).
func TestCreatePolicyRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		id := f.createDataset("alice", "d", false)
		const n = 8
		statuses := make([]int, n)
		bodies := make([]string, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				body := fmt.Sprintf(`{"name": "one", "source": "raise \"r%d\" if:\n    (m: Message)\n"}`, i)
				req, err := http.NewRequest("POST", f.hs.URL+"/api/v1/datasets/"+id+"/policies", strings.NewReader(body))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header.Set("Authorization", "Bearer "+f.keys["alice"])
				req.Header.Set("Content-Type", "application/json")
				<-start
				resp, err := f.hs.Client().Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				statuses[i], bodies[i], errs[i] = resp.StatusCode, string(b), err
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range n {
			switch {
			case errs[i] != nil:
				t.Errorf("request %d: %v", i, errs[i])
			case statuses[i] == http.StatusCreated && winner < 0:
				winner = i
			case statuses[i] == http.StatusCreated:
				t.Errorf("requests %d and %d both got 201", winner, i)
			case statuses[i] != http.StatusConflict || !strings.Contains(bodies[i], `already has a policy named \"one\"`):
				t.Errorf("request %d: status %d, want 409 naming the existing policy\n%s", i, statuses[i], bodies[i])
			}
		}
		if winner < 0 {
			t.Fatal("no request got 201")
		}
		var list struct {
			Policies []struct{ Name, Source string }
		}
		f.must(http.StatusOK, "GET", "/api/v1/datasets/"+id+"/policies", "alice", "").json(t, &list)
		if want := fmt.Sprintf("r%d", winner); len(list.Policies) != 1 || !strings.Contains(list.Policies[0].Source, want) {
			t.Errorf("policies = %+v, want the winner's (source raising %q) alone", list.Policies, want)
		}
	})
}
