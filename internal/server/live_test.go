package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// TestLiveFeedManyTraces: two servers on one PostgreSQL database; a change
// of 400 traces at once on one (more than one notice holds) reaches the
// listeners of each of them on the other, and none on the server that
// made it hears it twice.
func TestLiveFeedManyTraces(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	var servers [2]*Server
	for i := range servers {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		servers[i] = New(Config{Store: st, NoBackground: true})
		if err := servers[i].Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(servers[i].Close)
	}
	a, b := servers[0], servers[1]
	ids := make([]string, 400)
	heard := make([]<-chan struct{}, len(ids))
	own := make([]<-chan struct{}, len(ids))
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-7000-8000-%012d", i)
		var stop func()
		heard[i], stop = b.live.subscribe(ids[i])
		t.Cleanup(stop)
		own[i], stop = a.live.subscribe(ids[i])
		t.Cleanup(stop)
	}
	// The listener may not listen yet: change until the first is heard.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.live.changed(ids[0])
		select {
		case <-heard[0]:
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no notice heard in 10 s")
			}
			continue
		}
		break
	}
	for _, c := range own {
		select {
		case <-c: // told here, once per change
		default:
		}
	}
	a.live.changed(ids...)
	for i, c := range heard {
		select {
		case <-c:
		case <-time.After(time.Until(deadline.Add(5 * time.Second))):
			t.Fatalf("trace %d of %d: no notice on the other server", i, len(ids))
		}
	}
	for i, c := range own {
		select {
		case <-c:
		default:
			t.Fatalf("trace %d: its own server's listener was not told", i)
		}
	}
	// Its own notices come back to it and are skipped: no second notice.
	time.Sleep(300 * time.Millisecond)
	for i, c := range own {
		select {
		case <-c:
			t.Fatalf("trace %d: told twice on its own server", i)
		default:
		}
	}
}

// TestPresence: a server counts another from its first notice of being
// alive, not itself, and stops counting it presenceTTL after its last.
func TestPresence(t *testing.T) {
	var h liveHub
	h.origin = "me"
	if h.others() != 0 {
		t.Fatal("a server alone counts others")
	}
	h.heard("other " + noticeAlive)
	h.heard("me " + noticeAlive) // its own, come back
	if n := h.others(); n != 1 {
		t.Fatalf("after another's notice: %d others, want 1", n)
	}
	h.mu.Lock()
	h.seen["other"] = time.Now().Add(-presenceTTL - time.Second)
	h.mu.Unlock()
	if h.othersAlive() {
		t.Error("a server silent for longer than presenceTTL still counts")
	}
}
