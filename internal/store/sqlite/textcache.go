package sqlite

import (
	"sync"

	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// textCache keeps the ids of texts the index holds (by hash), so that a
// text the indexer met recently is referred to, not written again (agents
// repeat their system prompts, tool names and outputs). It is right only
// for the index file as it was when it learned them: search_state's gen,
// random at the index's creation and moved on by every step that deletes
// texts (in any process), names that state, and a step that reads another
// gen starts from an empty cache. What a step learns is kept only once its
// transaction has committed. Two generations: when the newer is full, the
// older is dropped, so texts met again and again stay.
type textCache struct {
	mu       sync.Mutex
	gen      int64
	ids, old map[storeutil.TextHash]int64
}

// maxCachedTexts bounds each generation of the cache (about 50 bytes an
// entry).
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
		c.reset(gen)
		return
	}
	for h := range texts {
		if id, ok := c.ids[h]; ok {
			ids[h] = id
		} else if id, ok := c.old[h]; ok {
			ids[h] = id
			c.put(h, id) // met again: into the newer generation
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
	if c.gen != before || before != after || c.ids == nil {
		c.reset(after)
		return
	}
	for h, id := range ids {
		c.put(h, id)
	}
}

func (c *textCache) reset(gen int64) {
	c.gen, c.ids, c.old = gen, map[storeutil.TextHash]int64{}, nil
}

func (c *textCache) put(h storeutil.TextHash, id int64) {
	if len(c.ids) >= maxCachedTexts {
		c.old, c.ids = c.ids, make(map[storeutil.TextHash]int64, maxCachedTexts/4)
	}
	c.ids[h] = id
}
