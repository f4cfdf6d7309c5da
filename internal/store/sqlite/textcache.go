package sqlite

import (
	"sync"

	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// textCache keeps the ids of texts the index holds (by hash), so that the
// indexer looks up only texts it has not met (agents repeat their system
// prompts, tool names and outputs; the lookups were a quarter of the
// index's writes). It is right only for the index file as it was when it
// learned them: search_state's gen, random at the index's creation and
// moved on by every step that deletes texts (in any process), names that
// state, and a step that reads another gen starts from an empty cache.
// What a step learns is kept only once its transaction has committed.
type textCache struct {
	mu  sync.Mutex
	gen int64
	ids map[storeutil.TextHash]int64
}

// maxCachedTexts bounds the cache (about 50 bytes an entry).
const maxCachedTexts = 1 << 18

// known copies into ids the cached ids of texts, if the cache is of gen
// (else it empties it).
func (c *textCache) known(gen int64, texts map[storeutil.TextHash]string, ids map[storeutil.TextHash]int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.ids == nil {
		c.gen, c.ids = gen, map[storeutil.TextHash]int64{}
		return
	}
	for h := range texts {
		if id, ok := c.ids[h]; ok {
			ids[h] = id
		}
	}
}

// learned adds what a committed step learned at gen (its gen after it:
// the same unless it deleted texts, then the cache starts over).
func (c *textCache) learned(before, after int64, ids map[storeutil.TextHash]int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != before || before != after {
		c.gen, c.ids = after, map[storeutil.TextHash]int64{}
		return
	}
	if len(c.ids)+len(ids) > maxCachedTexts {
		clear(c.ids)
	}
	for h, id := range ids {
		c.ids[h] = id
	}
}
