package gateway

import (
	"bytes"
	"container/list"
	"encoding/json"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// An agent sends its whole conversation again on every call, so a call of
// a long conversation is mostly the bytes of the call before it. Reading
// them again cost more than anything else the gateway does with a call
// (decoding 500 messages, hashing them for the conversation's heads and
// the guard's snapshots). A requestShape reads a request whose messages
// are one JSON array of messages decoded one at a time, and a
// requestCache keeps recent requests, so that a request that begins with
// the same bytes as a kept one, up to the end of one of its messages, is
// read from there on: the kept messages' events, heads and sums are taken
// as they are, and the rest of the body (new messages, the members after
// the array) is read as usual. Anything unexpected in that rest reads the
// whole body again, so errors name the same places as without the cache.

// requestShape is how a provider's request body is read.
type requestShape struct {
	provider string
	// array is the member holding the messages.
	array string
	// field reads any other member into st.
	field func(st *requestState, s *jsonscan.Scanner, key string) error
	// message reads one message of the array as its events; it must not
	// depend on the messages before it.
	message func(s *jsonscan.Scanner) ([]trace.Event, error)
}

// requestState is what the members other than the messages give.
type requestState struct {
	model     string
	stream    bool
	tools     json.RawMessage
	functions json.RawMessage // OpenAI's deprecated form of tools
	// lead are the events before the messages (a system prompt given
	// apart); leadSets counts the members that gave them.
	lead     []trace.Event
	leadSets int
}

// parsedRequest is a request as read, with what a later request beginning
// with the same bytes can reuse.
type parsedRequest struct {
	Request
	body []byte
	// ends[i] is the offset just after message i; counts[i] the events of
	// messages 0..i.
	ends   []int
	counts []int
	msgs   []trace.Event // the messages' events (Events less lead)
	before requestState  // the members read before the array
	lead   int           // len(lead)
	// leadAfter: a member after the array gave the lead events, so they
	// are not those of the bytes before the array.
	leadAfter bool
	// reused is the number of events (from the start) taken from the kept
	// request this one was read after, whose heads and sums hold here too;
	// from is that request.
	reused int
	from   *parsedRequest
	// heads and sums of Events, when computed (Heads, prefixSums).
	heads []string
	sums  []eventsSum
	// once: the array member came once (a second one is not resumable).
	once bool
	// grown: a request read after this one took the room past the end of
	// msgs (resume).
	grown atomic.Bool
	key   uint64 // the cache bucket of body
	// trace is Events as the policies saw them, put once the call's
	// checks are done; the next call that reads after this request and
	// holds all its events takes it (it is not for two calls at once).
	trace atomic.Pointer[policy.Trace]
}

// takeTrace takes the Trace of the kept request pr was read after, when
// pr's events begin with all of that request's (pr may be nil).
func (pr *parsedRequest) takeTrace() *policy.Trace {
	if pr == nil || pr.from == nil || pr.reused != len(pr.from.Events) {
		return nil
	}
	return pr.from.trace.Swap(nil)
}

// putTrace keeps t, the Trace of pr's events, for the next call.
func (pr *parsedRequest) putTrace(t *policy.Trace) {
	if t != nil && t.Len() == len(pr.Events) {
		pr.trace.Store(t)
	}
}

func (st *requestState) finish(msgs []trace.Event) Request {
	req := Request{Model: st.model, Stream: st.stream, Tools: st.tools}
	if req.Tools == nil {
		req.Tools = st.functions
	}
	if len(st.lead) == 0 {
		req.Events = msgs
	} else {
		req.Events = append(append(make([]trace.Event, 0, len(st.lead)+len(msgs)), st.lead...), msgs...)
	}
	return req
}

// common reads the members both shapes share (model, stream, tools) and
// reports whether key was one.
func (st *requestState) common(s *jsonscan.Scanner, key string) (bool, error) {
	var err error
	switch key {
	case "model":
		st.model, err = optString(s, "model")
	case "stream":
		st.stream, err = optBool(s, "stream")
	case "tools":
		st.tools, err = optRaw(s)
	default:
		return false, nil
	}
	return true, err
}

// request is Provider.ParseRequest for the shape.
func (sh *requestShape) request(body []byte) (Request, error) {
	pr, err := sh.parse(body)
	if err != nil {
		return Request{}, err
	}
	return pr.Request, nil
}

// parse reads body whole.
func (sh *requestShape) parse(body []byte) (*parsedRequest, error) {
	pr := &parsedRequest{body: body, once: true}
	var st requestState
	has := false
	s := jsonscan.New(body)
	err := decodeBody(s, "request body", func(key string) error {
		if key != sh.array {
			return sh.field(&st, s, key)
		}
		if has {
			pr.once = false
		}
		has = true
		pr.before = st
		pr.msgs, pr.ends, pr.counts = []trace.Event{}, pr.ends[:0], pr.counts[:0]
		if err := s.Expect(jsonscan.Array, sh.array); err != nil {
			return err
		}
		return s.Array(func(int) error {
			evs, err := sh.message(s)
			pr.msgs = append(pr.msgs, evs...)
			pr.ends = append(pr.ends, s.Offset())
			pr.counts = append(pr.counts, len(pr.msgs))
			return err
		})
	})
	if err == nil && !has {
		err = s.ErrorAt(0, "the request has no %q", sh.array)
	}
	if err != nil {
		return nil, wrapError(sh.provider, "request", err)
	}
	pr.Request = st.finish(pr.msgs)
	pr.lead = len(st.lead)
	pr.leadAfter = st.leadSets != pr.before.leadSets
	return pr, nil
}

// resume reads body, whose bytes up to the end of from's message j are
// from's, from there on; ok is false when the rest is not as expected (the
// caller then reads the body whole).
func (sh *requestShape) resume(body []byte, from *parsedRequest, j int) (*parsedRequest, bool) {
	pr := &parsedRequest{body: body, once: true, before: from.before, from: from}
	st := from.before
	n := from.counts[j]
	if n == len(from.msgs) && from.grown.CompareAndSwap(false, true) {
		// The first request read after all of from's messages appends its
		// own in place, past the end of from's (which from does not see):
		// a conversation's calls share one growing array of events instead
		// of copying it on each call.
		pr.msgs = from.msgs
	} else {
		pr.msgs = append(make([]trace.Event, 0, n+n/4+8), from.msgs[:n]...)
	}
	pr.ends = append(make([]int, 0, j+9), from.ends[:j+1]...)
	pr.counts = append(make([]int, 0, j+9), from.counts[:j+1]...)
	s := jsonscan.New(body)
	pos := from.ends[j]
	// The messages after j.
	for {
		pos = skipSpace(body, pos)
		if pos >= len(body) {
			return nil, false
		}
		if body[pos] == ']' {
			pos++
			break
		}
		if body[pos] != ',' {
			return nil, false
		}
		s.Seek(pos + 1)
		evs, err := sh.message(s)
		if err != nil {
			return nil, false
		}
		pr.msgs = append(pr.msgs, evs...)
		pos = s.Offset()
		pr.ends = append(pr.ends, pos)
		pr.counts = append(pr.counts, len(pr.msgs))
	}
	// The members after the array.
	for {
		pos = skipSpace(body, pos)
		if pos >= len(body) {
			return nil, false
		}
		if body[pos] == '}' {
			s.Seek(pos + 1)
			if s.End() != nil {
				return nil, false
			}
			break
		}
		if body[pos] != ',' {
			return nil, false
		}
		s.Seek(pos + 1)
		if s.Peek() != jsonscan.String {
			return nil, false
		}
		key, err := s.String("key")
		if err != nil || key == sh.array {
			return nil, false
		}
		pos = skipSpace(body, s.Offset())
		if pos >= len(body) || body[pos] != ':' {
			return nil, false
		}
		s.Seek(pos + 1)
		if sh.field(&st, s, key) != nil {
			return nil, false
		}
		pos = s.Offset()
	}
	pr.Request = st.finish(pr.msgs)
	pr.lead = len(st.lead)
	pr.leadAfter = st.leadSets != pr.before.leadSets
	if !pr.leadAfter && !from.leadAfter {
		// The events before the messages are in both those of the bytes
		// before the array, which are the same: the kept events are the
		// same events at the same places.
		pr.reused = pr.lead + n
	}
	return pr, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// extendHeads is Heads(events), events being pr's (pr may be nil), with
// the heads of the events taken from the kept request as they were.
func (pr *parsedRequest) extendHeads(events []trace.Event) []string {
	if pr == nil || pr.from == nil || len(pr.from.heads) < pr.reused || pr.reused == 0 {
		return Heads(events)
	}
	known := pr.from.heads[:pr.reused]
	heads := make([]string, len(known), len(events))
	copy(heads, known)
	return append(heads, ExtendHeads(known[len(known)-1], events[len(known):])...)
}

// knownSums are the sums of the events taken from the kept request (pr
// may be nil).
func (pr *parsedRequest) knownSums() []eventsSum {
	if pr == nil || pr.from == nil || len(pr.from.sums) < pr.reused {
		return nil
	}
	return pr.from.sums[:pr.reused]
}

// requestCache keeps recent requests by the first bytes of their body.
// Memory is bounded by an estimate of what a request holds (its body, its
// decoded events and their Trace), the least recently used going first:
// at the default bound, a few hundred conversations of 500 events; the
// others are read whole, which gives the same answer. Each owner's
// requests are kept apart (read).
type requestCache struct {
	mu       sync.Mutex
	byStart  map[uint64]*list.List // of *cached, most recent first
	lru      list.List             // of *cached
	bytes    int64
	maxBytes int64
	minBody  int   // bodies shorter are read whole (minCachedBody; tests set less)
	hits     int64 // requests read after a kept one, for tests
}

type cached struct {
	pr    *parsedRequest
	size  int64
	inKey *list.Element
	inLRU *list.Element
}

const (
	// Bodies smaller than this are read whole: it costs little.
	minCachedBody = 4 << 10
	// The bytes of a body's start that choose its bucket.
	startBytes = 256
	// Requests kept per bucket (conversations of one agent share their
	// start): a lookup compares the body with each.
	maxPerStart = 32
	// maxRequestBytes bounds the cache's estimate of what it keeps.
	maxRequestBytes = 128 << 20
)

var startSeed = maphash.MakeSeed()

func newRequestCache(maxBytes int64) *requestCache {
	return &requestCache{byStart: map[uint64]*list.List{}, maxBytes: maxBytes, minBody: minCachedBody}
}

// read reads body with sh: after the kept request sharing the longest
// prefix with it, up to the end of a message, when there is one. The
// request is not kept yet: keep it once its heads and sums are known.
func (c *requestCache) read(sh *requestShape, owner string, body []byte) (*parsedRequest, error) {
	if len(body) < c.minBody {
		return sh.parse(body)
	}
	// Each owner's requests are kept apart: what one reads as the same
	// bytes another sent is the same request, but how fast it was read
	// should not tell anyone what another owner's agents send.
	var h maphash.Hash
	h.SetSeed(startSeed)
	h.WriteString(owner)
	h.WriteByte(0)
	h.Write(body[:min(len(body), startBytes)])
	key := h.Sum64()
	if from, j := c.find(key, body); from != nil {
		if pr, ok := sh.resume(body, from, j); ok {
			pr.key = key
			return pr, nil
		}
	}
	pr, err := sh.parse(body)
	if err == nil {
		pr.key = key
	}
	return pr, err
}

// find returns the kept request of bucket key whose messages up to j are
// body's longest prefix of whole messages. The bodies are compared outside
// the lock (kept requests do not change): calls in parallel do not wait on
// each other's comparisons.
func (c *requestCache) find(key uint64, body []byte) (*parsedRequest, int) {
	c.mu.Lock()
	var cands []*cached
	if l := c.byStart[key]; l != nil {
		cands = make([]*cached, 0, l.Len())
		for el := l.Front(); el != nil; el = el.Next() {
			cands = append(cands, el.Value.(*cached))
		}
	}
	c.mu.Unlock()
	var best *cached
	bestJ, bestEnd := -1, 0
	for _, e := range cands {
		ends := e.pr.ends
		if len(ends) == 0 || ends[len(ends)-1] <= bestEnd {
			continue
		}
		common := commonPrefix(e.pr.body, body)
		// The last message that ends within the common prefix.
		lo, hi := 0, len(ends) // ends[lo-1] <= common < ends[hi]
		for lo < hi {
			m := (lo + hi) / 2
			if ends[m] <= common {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if j := lo - 1; j >= 0 && ends[j] > bestEnd {
			best, bestJ, bestEnd = e, j, ends[j]
		}
	}
	if best == nil {
		return nil, -1
	}
	c.mu.Lock()
	c.hits++
	// Moves nothing if it went meanwhile.
	c.lru.MoveToFront(best.inLRU)
	if l := c.byStart[key]; l != nil {
		l.MoveToFront(best.inKey)
	}
	c.mu.Unlock()
	return best.pr, bestJ
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	// In blocks first: bytes.Equal compares at memory speed.
	for step := 4096; step >= 64; step /= 8 {
		for i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]) {
			i += step
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// keep keeps pr, read by c, with its heads and sums set: it is not changed
// after. The request it was read after goes when pr holds all its messages
// (the conversation moved on).
func (c *requestCache) keep(pr *parsedRequest) {
	from := pr.from
	pr.from = nil // not a chain of every request of the conversation
	// The body, its events (a few times its bytes), heads and sums, and the
	// Trace put later (objects of a few hundred bytes per event).
	size := int64(len(pr.body))*4 + 64*int64(len(pr.ends)) + 600*int64(len(pr.Events))
	if len(pr.body) < c.minBody || !pr.once || size > c.maxBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.byStart[pr.key]; l != nil && from != nil && len(pr.ends) >= len(from.ends) {
		for el := l.Front(); el != nil; el = el.Next() {
			if e := el.Value.(*cached); e.pr == from {
				c.drop(e)
				break
			}
		}
	}
	l := c.byStart[pr.key]
	if l == nil {
		l = list.New()
		c.byStart[pr.key] = l
	}
	e := &cached{pr: pr, size: size}
	e.inKey = l.PushFront(e)
	e.inLRU = c.lru.PushFront(e)
	c.bytes += size
	for l.Len() > maxPerStart {
		c.drop(l.Back().Value.(*cached))
	}
	for c.bytes > c.maxBytes && c.lru.Len() > 0 {
		c.drop(c.lru.Back().Value.(*cached))
	}
}

func (c *requestCache) drop(e *cached) {
	l := c.byStart[e.pr.key]
	l.Remove(e.inKey)
	if l.Len() == 0 {
		delete(c.byStart, e.pr.key)
	}
	c.lru.Remove(e.inLRU)
	c.bytes -= e.size
}
