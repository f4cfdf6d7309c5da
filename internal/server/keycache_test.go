package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// TestKeyCache checks that a key's owner is kept for keyTTL and no longer,
// that a revocation forgets every key, and that the cache stays bounded.
func TestKeyCache(t *testing.T) {
	var c keyCache
	if _, ok := c.get("h"); ok {
		t.Fatal("an empty cache found a key")
	}
	c.put("h", store.User{ID: "u1"})
	if u, ok := c.get("h"); !ok || u.ID != "u1" {
		t.Fatalf("get after put = %v, %v", u, ok)
	}
	c.mu.Lock()
	c.m["h"] = keyEntry{u: store.User{ID: "u1"}, at: time.Now().Add(-keyTTL)}
	c.mu.Unlock()
	if _, ok := c.get("h"); ok {
		t.Error("a key older than keyTTL was found")
	}
	c.put("h", store.User{ID: "u1"})
	c.clear()
	if _, ok := c.get("h"); ok {
		t.Error("a key was found after clear")
	}
	for i := range maxKeySeen + 5 {
		c.put(fmt.Sprint(i), store.User{ID: "u"})
	}
	if n := len(c.m); n > maxKeySeen {
		t.Errorf("%d keys kept, at most %d", n, maxKeySeen)
	}
}
