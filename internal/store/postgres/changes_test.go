package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestChangeFeed: notices published by one store reach another's listener
// on the same database; when the listener's connection is cut (its backend
// terminated), it listens again by itself, says notices were missed, and
// hears the next ones.
func TestChangeFeed(t *testing.T) {
	a, b := open(t).(*Store), open(t).(*Store)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		notices []string
		missed  int
	)
	done := make(chan error, 1)
	go func() {
		done <- b.ListenChanged(ctx, func(n string) {
			mu.Lock()
			notices = append(notices, n)
			mu.Unlock()
		}, func() {
			mu.Lock()
			missed++
			mu.Unlock()
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenChanged: %v", err)
		}
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in 10 s (notices %q, missed %d)", what, notices, missed)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	has := func(n string) func() bool {
		return func() bool {
			for _, x := range notices {
				if x == n {
					return true
				}
			}
			return false
		}
	}
	// Until the listener listens, a notice may go unheard: publish until
	// one is heard.
	for i := 0; ; i++ {
		if err := a.PublishChanged(ctx, "first"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		heard := len(notices) > 0
		mu.Unlock()
		if heard {
			break
		}
		if i == 500 {
			t.Fatal("no notice heard in 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.PublishChanged(ctx, "origin id-1 id-2"); err != nil {
		t.Fatal(err)
	}
	waitUntil(`the notice "origin id-1 id-2"`, has("origin id-1 id-2"))

	// Cut the listener's connection.
	tag, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN %' AND datname = current_database()`)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() == 0 {
		t.Fatal("no listening backend to terminate")
	}
	waitUntil("missed after the cut", func() bool { return missed == 1 })
	if err := a.PublishChanged(ctx, "after the cut"); err != nil {
		t.Fatal(err)
	}
	waitUntil(`the notice "after the cut"`, has("after the cut"))
	mu.Lock()
	defer mu.Unlock()
	for _, n := range notices {
		if !strings.Contains(n, "first") && n != "origin id-1 id-2" && n != "after the cut" {
			t.Errorf("unexpected notice %q", n)
		}
	}
}
